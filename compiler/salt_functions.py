"""The ``salt`` function table templates see (``salt['grains.get'](...)``).

Only pure functions live here: they read the minion's grains, pillar and opts
and nothing else.  The runtime may add functions with side effects (for a
minion applying states) through ``FunctionTable.extend``; asking for a function
that is not in the table is a clear error, never a silent None.
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Callable, Mapping
from typing import Any

from compiler import match, merge

_MISSING = object()


class FunctionNotAvailable(Exception):
    """Not a KeyError on purpose: Jinja turns a KeyError from ``salt['x']`` into an undefined value
    and the reason would be lost."""

    def __str__(self) -> str:
        return (f"salt['{self.args[0]}'] is not available while compiling; saltpan compile-time "
                "templates can call grains.*, pillar.*, config.*, match.*, defaults.* and slsutil.*")


class FunctionTable(dict[str, Callable[..., Any]]):
    """A dict of callables; a missing name raises FunctionNotAvailable."""

    def __missing__(self, key: str) -> Any:
        raise FunctionNotAvailable(key)

    def extend(self, functions: Mapping[str, Callable[..., Any]]) -> FunctionTable:
        """Add functions the table does not have yet (the pure compile-time ones always win)."""
        for name, func in functions.items():
            self.setdefault(name, func)
        return self


def _getter(data_fn: Callable[[], Mapping[str, Any]]) -> Callable[..., Any]:
    def get(key: str = "", default: Any = "", delimiter: str = ":", merge: bool = False, **_: Any) -> Any:
        data = data_fn()
        if not key:
            return data
        value = match.traverse(data, key, _MISSING, delimiter)
        if value is _MISSING:
            return default
        if merge and isinstance(value, dict) and isinstance(default, dict):
            return _merge(default, value)
        return value

    return get


def _merge(dest: Mapping[str, Any], upd: Mapping[str, Any], strategy: str = "smart", merge_lists: bool = False, **_: Any) -> dict[str, Any]:
    return merge.merge(dest, upd, strategy, merge_lists)


def _item(data_fn: Callable[[], Mapping[str, Any]]) -> Callable[..., Any]:
    def item(*keys: str, default: Any = "", delimiter: str = ":", **_: Any) -> dict[str, Any]:
        data = data_fn()
        out = {}
        for key in keys:
            value = match.traverse(data, key, _MISSING, delimiter)
            out[key] = default if value is _MISSING else value
        return out

    return item


def build(minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any], opts: Mapping[str, Any],
          nodegroups: Mapping[str, Any] | None = None) -> FunctionTable:
    """The compile-time function table for one minion."""
    groups = nodegroups if nodegroups is not None else (opts.get("nodegroups") or {})
    minion = match.Minion(minion_id, grains, pillar)

    def config_get(key: str, default: Any = "", delimiter: str = ":", **_: Any) -> Any:
        for source in (opts, grains, pillar):
            value = match.traverse(source, key, _MISSING, delimiter)
            if value is not _MISSING:
                return value
        master = pillar.get("master") if isinstance(pillar, Mapping) else None
        if isinstance(master, Mapping):
            value = match.traverse(master, key, _MISSING, delimiter)
            if value is not _MISSING:
                return value
        return default

    def grains_filter_by(lookup: Mapping[str, Any], grain: str = "os_family", merge: Mapping[str, Any] | None = None,
                         default: str = "default", base: str | None = None) -> Any:
        return filter_by(lookup, match.traverse(grains, grain, None), merge, default, base)

    def matcher(tgt_type: str) -> Callable[..., bool]:
        def run(tgt: Any, delimiter: str = ":", **_: Any) -> bool:
            return match.match_one(tgt_type, tgt, minion, groups, delimiter)

        return run

    table = FunctionTable({
        "grains.get": _getter(lambda: grains),
        "grains.item": _item(lambda: grains),
        "grains.items": lambda: grains,
        "grains.ls": lambda: sorted(grains),
        "grains.has_value": lambda key, **_: bool(match.traverse(grains, key, None)),
        "grains.filter_by": grains_filter_by,
        "pillar.get": _getter(lambda: pillar),
        "pillar.item": _item(lambda: pillar),
        "pillar.items": lambda *a, **k: pillar,
        "pillar.raw": lambda key=None: pillar if key is None else pillar.get(key, {}),
        "pillar.ls": lambda: sorted(pillar),
        "pillar.keys": lambda key, default=None, delimiter=":": list(
            match.traverse(pillar, key, {}, delimiter) or {}),
        "pillar.file_exists": lambda *a, **k: False,
        "pillar.filter_by": lambda lookup, pillar_key="", merge=None, default="default", base=None:
            filter_by(lookup, match.traverse(pillar, pillar_key, None), merge, default, base),
        "config.get": config_get,
        "config.option": config_get,
        "defaults.merge": lambda dest, src, merge_lists=False, in_place=True: _merge(dest, src, "smart",
                                                                                     merge_lists),
        "defaults.deepcopy": copy.deepcopy,
        "defaults.update": lambda dest, defaults, merge_lists=True, in_place=True: _merge(defaults, dest,
                                                                                           "smart",
                                                                                           merge_lists),
        "slsutil.merge": _merge,
        "slsutil.merge_all": lambda lst, strategy="smart", merge_lists=False: _merge_all(lst, strategy,
                                                                                       merge_lists),
        "slsutil.update": lambda dest, upd, recursive_update=True, merge_lists=False: _merge(
            dest, upd, "smart" if recursive_update else "overwrite", merge_lists),
        "test.ping": lambda: True,
        "test.true": lambda: True,
        "test.false": lambda: False,
        "test.echo": lambda text: text,
    })
    for tgt_type in match.MATCH_TYPES:
        table[f"match.{tgt_type}"] = matcher(tgt_type)
    return table


def _merge_all(items: list[Any], strategy: str, merge_lists: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        out = merge.merge(out, item, strategy, merge_lists)
    return out


def filter_by(lookup: Mapping[str, Any], value: Any, merge_with: Mapping[str, Any] | None = None, default: str = "default",
              base: str | None = None) -> Any:
    """Salt's filter_by: pick the lookup entry whose key matches value (glob)."""
    keys = value if isinstance(value, list) else [value]
    found = None
    for key in keys:
        for candidate in lookup:
            if key is not None and fnmatch.fnmatchcase(str(key), str(candidate)):
                found = lookup[candidate]
                break
        if found is not None:
            break
    if found is None:
        found = lookup.get(default)
    if base and base in lookup:
        found = merge.merge(lookup[base], found or {}) if isinstance(found, Mapping) or found is None else found
    if merge_with and isinstance(found, Mapping):
        found = merge.merge(found, merge_with)
    return found
