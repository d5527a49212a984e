"""YAML loading the way Salt loads sls data.

Safe loading only (no tags that build Python objects), through the C parser
when PyYAML has it, with Salt's differences from plain YAML 1.1:

* integers with a leading zero are decimal (``0755`` -> 755), as Salt's loader does;
* timestamps stay strings (``2024-01-02`` -> ``"2024-01-02"``);
* a key repeated in one mapping is an error ("found conflicting ID 'x'").

Aliases are bounded: a document whose aliases expand it beyond
``max(ALIAS_EXPANSION_FLOOR, ALIAS_EXPANSION_FACTOR * its length)`` (values plus
characters of their text, counted as if every alias were written out), or that
refers to itself, is refused naming the line of the smallest part that grows
too large.  Without the bound, a 257-byte grain pasted into a pillar template
("billion laughs") grew into a 4.9 MiB pillar in 3.3 s on the master.

``load`` returns the data, and on request the line of every mapping key
(``{("a", "b"): 3}``) for provenance and error messages.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from compiler.errors import RENDER_ERROR, CompileError

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ALIAS_EXPANSION_FLOOR = 1_000_000     # values + characters any document may expand to through aliases
ALIAS_EXPANSION_FACTOR = 100          # ... or this many times its own length, when that is more
# An anchor (&name) and an alias (*name) where a node starts (line start, or after ':', '-', '?',
# '[', '{', ',', and for an anchor after a tag): only then can a document expand.  Shell text such
# as "a && rm *.tmp" inside a plain scalar does not match, so ordinary sls files skip the walk.
_NODE_START = r"(?:^[ \t]*|[:?,\[{-][ \t]*)"
_MAY_ALIAS = re.compile(r"(?:" + _NODE_START + r"|![^\s]*[ \t]+)&[^\s\[\]{},]", re.MULTILINE)
_ALIAS = re.compile(_NODE_START + r"\*[^\s\[\]{},]", re.MULTILINE)

# only unsigned values: Salt reads -010 and +010 as YAML 1.1 octal (-8, 8)
_LEADING_ZERO_INT = re.compile(r"^0[0-9_]+$")


class SaltYamlLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader with Salt's int, timestamp and duplicate-key behaviour."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's own constructors fail with IndexError, ValueError, OverflowError ... on some
        # values (`!!float` with nothing after it, `!!int` of a word, `!!binary` of non-base64):
        # each becomes a YAML error at that node's line, never an exception escaping the loader
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError) as exc:
            shown = node.value if isinstance(node, yaml.ScalarNode) else f"a {getattr(node, 'id', 'node')}"
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {str(shown)[:40]!r} as {node.tag.rsplit(':', 1)[-1]} ({exc})",
                node.start_mark) from exc


def _construct_int(loader: SaltYamlLoader, node: yaml.ScalarNode) -> int:
    value = loader.construct_scalar(node)
    text = str(value).replace("_", "")
    if _LEADING_ZERO_INT.match(text):
        return int(text, 10)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


def _construct_timestamp(loader: SaltYamlLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: SaltYamlLoader, node: yaml.Node) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):   # `!!map text`
        raise yaml.constructor.ConstructorError(None, None, f"expected a mapping node, but found {getattr(node, 'id', 'node')}",
                                                node.start_mark)
    # Keys written in the mapping override the ones a merge key (<<: *anchor) brings in, as in Salt;
    # only a key written twice is a conflict.
    # (only scalar keys can be compared before construction: a flow mapping or sequence written as
    # a key, `{[1]: 1}` or a grain pasted into a template, is refused below as an unhashable key)
    own_pairs = {id(pair) for pair in node.value if pair[0].tag != _MERGE_TAG}
    own_keys = {pair[0].value for pair in node.value
                if pair[0].tag != _MERGE_TAG and isinstance(pair[0], yaml.ScalarNode)}
    loader.flatten_mapping(node)
    node.value = [pair for pair in node.value if id(pair) in own_pairs
                  or not isinstance(pair[0], yaml.ScalarNode) or pair[0].value not in own_keys]
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError as exc:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "found unhashable key (a map or a list written as a key; quote it if a template pasted it)",
                key_node.start_mark) from exc
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"found conflicting ID '{key}'", key_node.start_mark)
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


SaltYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
SaltYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
SaltYamlLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _key_lines(node: yaml.Node, prefix: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                path = prefix + (key_node.value,)
                out.setdefault(path, key_node.start_mark.line + 1)
                _key_lines(value_node, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _key_lines(item, prefix, out)


def _check_aliases(root: yaml.Node, text: str, display: str) -> None:
    """Refuse a document whose aliases make it expand beyond the bound, or refer to themselves.
    Linear in the distinct nodes: each collection's expanded size is computed once."""
    limit = max(ALIAS_EXPANSION_FLOOR, ALIAS_EXPANSION_FACTOR * len(text))
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[yaml.Node] = [root]
    scalar, mapping = yaml.ScalarNode, yaml.MappingNode
    while stack:
        node = stack[-1]
        key = id(node)
        if key in sizes:
            stack.pop()
            continue
        children = ([part for pair in node.value for part in pair] if isinstance(node, mapping)
                    else node.value if not isinstance(node, scalar) else ())
        if key not in entered:
            entered.add(key)
            waiting = False
            for child in children:
                if not isinstance(child, scalar) and id(child) not in sizes:
                    if id(child) in entered:   # entered and not finished: an ancestor of this node
                        raise CompileError(RENDER_ERROR, "a YAML alias refers to the anchor it is inside of "
                                                         "(recursive data cannot be rendered)", display,
                                           child.start_mark.line + 1)
                    stack.append(child)
                    waiting = True
            if waiting:
                continue
        size = 1 + (len(node.value) if isinstance(node, scalar) else 0)
        for child in children:
            size += 1 + len(child.value) if isinstance(child, scalar) else sizes[id(child)]
        if size > limit:
            raise CompileError(RENDER_ERROR, f"YAML aliases expand this value to more than {limit:,} values and "
                                             "characters (an alias bomb?); write the data out, or fewer aliases "
                                             "of large anchors", display, node.start_mark.line + 1)
        sizes[key] = size
        entered.discard(key)
        stack.pop()


def load(text: str, display: str = "<string>", want_lines: bool = False) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Parse one YAML document. Raises CompileError(render_error) with file:line."""
    loader = SaltYamlLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple[Any, ...], int] = {}
        if node is None:
            return None, lines
        if _MAY_ALIAS.search(text) and _ALIAS.search(text):
            _check_aliases(node, text, display)
        if want_lines:
            _key_lines(node, (), lines)
        elif isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    lines.setdefault((key_node.value,), key_node.start_mark.line + 1)
        return loader.construct_document(node), lines
    except yaml.YAMLError as exc:
        raise yaml_error(exc, display) from None
    finally:
        loader.dispose()


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None), bytes})


def copy_data(data: Any) -> Any:
    """A deep copy of plain parsed data (dicts, lists, immutable scalars), much faster than copy.deepcopy."""
    kind = type(data)
    if kind is dict:
        return {key: copy_data(value) for key, value in data.items()}
    if kind is list:
        return [copy_data(value) for value in data]
    return data


def _is_plain_tree(data: Any, seen: set[int]) -> bool:
    """True when data holds only dicts, lists and immutable scalars, none of them shared (no YAML aliases)."""
    kind = type(data)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is dict or kind is list:
        if id(data) in seen:
            return False
        seen.add(id(data))
        values = data.values() if kind is dict else data
        return all(_is_plain_tree(value, seen) for value in values)
    return False


class ParseCache:
    """``load`` memoised by text: across a fleet many minions render the very same text for one file.

    Every caller gets its own copy of the data, so mutating a result never
    reaches the cache.  Data that is not plain (sets, shared containers from
    YAML aliases) is never cached: its identities could not be copied faithfully.
    Parse errors are not cached either (each call raises anew with its own file).
    """

    def __init__(self, max_entries: int = 4096, max_text: int = 256 * 1024, max_total: int = 16 * 1024 * 1024):
        self.max_entries = max_entries
        self.max_text = max_text  # longer texts are not cached
        self.max_total = max_total  # characters of text held, all entries together (oldest go first)
        self._entries: dict[tuple[bool, str], tuple[Any, dict[tuple[Any, ...], int]]] = {}
        self._total = 0

    def load(self, text: str, display: str = "<string>", want_lines: bool = False) -> tuple[Any, dict[tuple[Any, ...], int]]:
        key = (want_lines, text)
        hit = self._entries.get(key)
        if hit is not None:
            return copy_data(hit[0]), dict(hit[1])
        data, lines = load(text, display, want_lines)
        if len(text) <= self.max_text and _is_plain_tree(data, set()):
            while self._entries and (len(self._entries) >= self.max_entries
                                     or self._total + len(text) > self.max_total):
                oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._total -= len(oldest[1])
            self._entries[key] = (copy_data(data), dict(lines))
            self._total += len(text)
        return data, lines


_UNKNOWN_TAG = re.compile(r"could not determine a constructor for the tag '(?:tag:yaml\.org,2002:)?([^']*)'")


def yaml_error(exc: yaml.YAMLError, display: str) -> CompileError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    tag = _UNKNOWN_TAG.search(str(problem))
    if tag:  # !!python/object/apply:os.system and friends: safe loading only, said plainly
        name = tag.group(1)
        shown = f"!!{name}" if not name.startswith("!") else name
        return CompileError(RENDER_ERROR, f"YAML tag {shown!r} is not allowed: sls data is loaded as plain data "
                                          "only (maps, lists, strings, numbers, booleans), never as Python objects",
                            display, line)
    context = getattr(exc, "context", None)
    detail = f"{context}: {problem}" if context else str(problem)
    kind = RENDER_ERROR
    return CompileError(kind, f"YAML syntax error: {detail}", display, line)


def safe_load(text: str) -> Any:
    """Load YAML data (for import_yaml / load_yaml and files), Salt-style."""
    return load(text)[0]


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _represent_str)


def dump(data: Any, flow_style: bool | None = True, default_style: str | None = None) -> str:
    """Dump for Jinja filters: flow style, insertion order, no document end marker."""
    text = yaml.dump(data, Dumper=_Dumper, default_flow_style=flow_style, sort_keys=False,
                     allow_unicode=True, default_style=default_style, width=float("inf"))
    if text.endswith("\n...\n"):
        text = text[:-5]
    return text.strip()
