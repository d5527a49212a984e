"""What the SQL drivers (sqlite3, postgres) share: Salt's sql_base query semantics.

Queries come from the driver's arguments:

* a list (``- sqlite3: [q1, q2]``): each result is merged at the pillar root;
* a mapping (``- sqlite3: {name: q}``): each result goes under its own key
  ``name`` (keys in sorted order, after the list items).

Each query is a string, a list ``[query, depth]`` or a mapping with ``query``
and the options ``depth``, ``as_list``, ``as_json``, ``with_lists`` and
``ignore_null``.  The minion id is bound to the query's single placeholder
(``%s`` for PostgreSQL, ``?`` for SQLite).

Rows become nested dicts.  For columns ``a, b, c, d``:

* depth 1: ``{a: {"b": b, "c": c, "d": d}}`` (column names as inner keys)
* depth 2: ``{a: {b: {"c": c, "d": d}}}``
* depth 3 (and 0, the default, and anything larger): ``{a: {b: {c: d}}}``

Later rows overwrite earlier ones; ``ignore_null`` keeps a value when a later
row has NULL there; ``as_list`` turns collisions into lists;
``with_lists: "1,3"`` (or ``[1, 3]``) turns the dicts at those column
positions into lists of their values; ``as_json`` reads a single JSON column
per row and merges the objects.

Values come out as plain data (numbers, strings, lists, dicts): database
decimals become int or float, dates and times ISO strings, UUIDs and
addresses strings, so that every pillar can be sent and printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from ext_pillar._errors import DriverError
from ext_pillar._plain import plain

_OPTIONS = ("query", "depth", "as_list", "as_json", "with_lists", "ignore_null")


@dataclass
class Query:
    """One normalised query: where its result goes (root) and how rows nest."""

    root: str | None
    query: str
    depth: int = 0
    as_list: bool = False
    as_json: bool = False
    with_lists: list[int] = field(default_factory=list)
    ignore_null: bool = False

    @property
    def label(self) -> str:
        return repr(self.root) if self.root is not None else repr(_shorten(self.query))


def _shorten(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _has_query(spec: Any) -> bool:
    if isinstance(spec, str):
        return bool(spec)
    if isinstance(spec, (list, tuple)):
        return bool(spec) and bool(spec[0])
    if isinstance(spec, Mapping):
        return bool(spec.get("query"))
    return False


def _int_option(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DriverError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def _with_lists(value: Any) -> list[int]:
    if value in (None, "", []):
        return []
    items: Iterable[Any]
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    else:
        raise DriverError(f"with_lists must be column numbers like \"1,3\" or [1, 3], got {value!r}")
    out = []
    for item in items:
        try:
            out.append(int(item))
        except (TypeError, ValueError):
            raise DriverError(f"with_lists must be column numbers like \"1,3\" or [1, 3], got {value!r}") from None
    return out


def _bool_option(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise DriverError(f"{name} must be true or false, got {value!r}")
    return value


def _one(root: str | None, spec: Any) -> Query:
    if isinstance(spec, str):
        return Query(root, spec)
    if isinstance(spec, (list, tuple)):
        if not isinstance(spec[0], str):
            raise DriverError(f"a query must be a string, got {spec[0]!r}")
        depth = _int_option("depth", spec[1]) if len(spec) > 1 else 0
        return Query(root, spec[0], depth)
    unknown = sorted(str(k) for k in spec if k not in _OPTIONS)
    if unknown:
        raise DriverError(f"unknown query option(s) {', '.join(unknown)} (known: {', '.join(_OPTIONS)})")
    if not isinstance(spec["query"], str):
        raise DriverError(f"a query must be a string, got {spec['query']!r}")
    return Query(
        root,
        spec["query"],
        _int_option("depth", spec.get("depth", 0)),
        _bool_option("as_list", spec.get("as_list", False)),
        _bool_option("as_json", spec.get("as_json", False)),
        _with_lists(spec.get("with_lists")),
        _bool_option("ignore_null", spec.get("ignore_null", False)),
    )


def extract_queries(args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Query]:
    """The driver's arguments as queries: positional ones first, then the named ones sorted by name.

    Items without a query (empty strings, numbers, mappings without ``query``)
    are skipped, as Salt skips them.
    """
    pending: list[tuple[str | None, Any]] = [(None, a) for a in args]
    pending += [(str(k), kwargs[k]) for k in sorted(kwargs, key=str)]
    return [_one(root, spec) for root, spec in pending if _has_query(spec)]


# -- values -------------------------------------------------------------------------

def plain_key(value: Any) -> Any:
    key = plain(value)
    if isinstance(key, (list, dict)):
        raise DriverError(f"a {type(key).__name__} value ({_shorten(repr(key))}) cannot be a pillar key; "
                          "select it in the last column or raise depth")
    return key


# -- nesting rows ---------------------------------------------------------------------

class _Nester:
    """Folds the rows of one query into ``focus`` (Salt's sql_base rules)."""

    def __init__(self, focus: dict, query: Query, field_names: list[str]):
        self.focus = focus
        self.q = query
        self.names = field_names
        self.n = len(field_names)
        depth = query.depth
        self.depth = self.n - 1 if depth == 0 or depth >= self.n else depth
        self.with_lists = set(query.with_lists)
        self._listify: dict[int, tuple[dict, list]] = {}

    def _mark(self, node: dict, key: Any) -> None:
        entry = self._listify.get(id(node))
        if entry is None:
            entry = self._listify[id(node)] = (node, [])
        if key not in entry[1]:
            entry[1].append(key)

    def add(self, row: Sequence[Any]) -> None:
        if self.q.as_json and self.n == 1:
            self._add_json(row[0])
            return
        values = [plain(v) for v in row]
        node = self.focus
        for i in range(self.depth - 1):
            key = plain_key(values[i])
            if i + 1 in self.with_lists:
                self._mark(node, key)
            node = self._descend(node, key)
        if self.depth == self.n - 1:
            key_at = self.n - 2
            key, value = plain_key(values[key_at]), values[self.n - 1]
            if (self.q.as_list and key in node) or key_at + 1 in self.with_lists:
                if key in node:
                    if not isinstance(node[key], list):
                        node[key] = [node[key]]
                else:
                    node[key] = []
                node[key].append(value)
            elif not self.q.ignore_null or value is not None:
                node[key] = value
            return
        key = plain_key(values[self.depth - 1])
        if key not in node:
            node[key] = {}
        if self.depth in self.with_lists:
            self._mark(node, key)
        node = self._descend(node, key)
        for i in range(self.depth, self.n):
            name = self.names[i]
            if i + 1 in self.with_lists:
                self._mark(node, name)
            if self.q.as_list and name in node:
                if isinstance(node[name], list):
                    node[name].append(values[i])
                else:
                    node[name] = [node[name], values[i]]
            elif not self.q.ignore_null or values[i] is not None:
                node[name] = values[i]

    def _descend(self, node: dict, key: Any) -> dict:
        current = node.get(key)
        if key not in node:
            node[key] = child = {}
        elif isinstance(current, dict):
            child = current
        elif isinstance(current, list):
            child = {}
            current.append(child)
        elif self.q.as_list:
            child = {}
            node[key] = [current, child]
        else:
            node[key] = child = {}
        return child

    def _add_json(self, value: Any) -> None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value).decode("utf-8", "replace")
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise DriverError(f"as_json: a row is not JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(value, Mapping):
            raise DriverError(f"as_json rows must hold JSON objects, got a {type(value).__name__}")
        _update(self.focus, plain(value), self.q.as_list)

    def finish(self) -> None:
        """with_lists: the marked dicts become lists of their values (innermost first)."""
        for node, keys in reversed(list(self._listify.values())):
            for key in keys:
                if key not in node:
                    continue
                if isinstance(node[key], dict):
                    node[key] = list(node[key].values())
                elif isinstance(node[key], list):
                    node[key] = [node[key]]


def _update(dest: dict, new: Mapping, merge_lists: bool) -> None:
    for key, value in new.items():
        old = dest.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            _update(old, value, merge_lists)
        elif merge_lists and isinstance(old, list) and isinstance(value, list):
            dest[key] = old + [v for v in value if v not in old]
        else:
            dest[key] = value


# -- running queries ------------------------------------------------------------------

Cursor = Any
Connect = Callable[[], AbstractContextManager[Cursor]]


def fetch(connect: Connect, minion_id: str, args: Sequence[Any], kwargs: Mapping[str, Any],
          db_name: str, describe_error: Callable[[Exception], str | None]) -> dict[str, Any]:
    """Run the queries on one connection and fold their rows into a dict.

    ``describe_error`` turns a database exception into a message (None: not a
    database error, let it through).
    """
    queries = extract_queries(args, kwargs)
    if not queries:
        raise DriverError(f"no query given: configure e.g. `- {db_name.lower()}: [\"SELECT key, value FROM "
                          "pillar WHERE minion = <placeholder>\"]`")
    result: dict[str, Any] = {}
    with connect() as cursor:
        for query in queries:
            rows = _run(cursor, query, minion_id, describe_error)
            names = [_column_name(col) for col in cursor.description]
            if query.root is not None:
                result[query.root] = focus = {}
            else:
                focus = result
            nester = _Nester(focus, query, names)
            for row in rows:
                nester.add(row)
            nester.finish()
    return result


def _run(cursor: Cursor, query: Query, minion_id: str,
         describe_error: Callable[[Exception], str | None]) -> Iterator[Sequence[Any]]:
    try:
        cursor.execute(query.query, (minion_id,))
        if cursor.description is None:
            raise DriverError(f"query {query.label} returned no columns; ext_pillar queries must be SELECTs")
        return iter(cursor.fetchall())
    except DriverError:
        raise
    except Exception as exc:
        text = describe_error(exc)
        if text is None:
            raise
        raise DriverError(f"query {query.label} failed: {text}") from None


def _column_name(column: Any) -> str:
    name = getattr(column, "name", None)
    return str(name if name is not None else column[0])
