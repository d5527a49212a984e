"""`saltpan compile --minion ID --explain KEY`: where a pillar value comes from.

From a tracked compile (``PillarCompiler.compile(track=True)``) take every
contribution that touched the key, in the order they were merged: sls files
(with the file:line of the key, and the top file entry and includes that
brought the sls in), ext_pillar drivers, ``pillar_opts`` and overrides.  For
each: what it contributed at the key, how it was merged, and the value after
the merge; then the final value.  A contribution touches the key when it
holds the key, a parent of it that is not a mapping (which replaces it), a
part of it (a sub-key, an include nested under it with ``key:``), or - with
the ``aggregate``/``overwrite`` strategies - the same top-level key (which
replaces it whole).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler import merge
from compiler.pillar import Contribution, PillarResult
from runtime.cli.masking import Masker

_MISSING = object()
_TOP_LEVEL_REPLACE = ("aggregate", "overwrite")


def parse_key(text: str, delimiter: str = ":") -> tuple[str, ...]:
    parts = tuple(part for part in text.split(delimiter))
    if not text or any(not part for part in parts):
        raise ValueError(f"bad key {text!r}: give a pillar key path like nginx:port")
    return parts


def lookup(data: Any, path: tuple) -> Any:
    """The value at path (keys compared as text, so `80` finds an integer key), or _MISSING."""
    cur = data
    for part in path:
        if not isinstance(cur, Mapping):
            return _MISSING
        if part in cur:
            cur = cur[part]
            continue
        for key, value in cur.items():
            if str(key) == str(part):
                cur = value
                break
        else:
            return _MISSING
    return cur


@dataclass
class Step:
    """One contribution's part in the value."""

    contribution: Contribution
    effect: str  # "sets", "sets a parent", "adds to it", "replaces the top-level key"
    value: Any  # what it contributed at the key (or at the parent it sets)
    at: tuple  # the path that value sits at (the key, or a parent of it)
    place: tuple[str | None, int | None]
    after: Any = _MISSING


@dataclass
class Explanation:
    minion: str
    key: tuple
    steps: list[Step] = field(default_factory=list)
    final: Any = _MISSING
    strategy: str = "smart"
    merge_lists: bool = False
    consistent: bool = True  # the merged steps give the final value
    suggestions: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.final is not _MISSING


def explain(result: PillarResult, minion: str, key: tuple) -> Explanation:
    out = Explanation(minion, key, strategy=result.strategy, merge_lists=result.merge_lists)
    out.final = lookup(result.pillar, key)
    simulated: dict = {}
    for contribution in result.contributions:
        step = _step(contribution, key)
        if step is None:
            continue
        full = _full_data(contribution)
        top = {key[0]: copy.deepcopy(lookup(full, key[:1]))}
        if contribution.strategy == "replace":
            simulated[key[0]] = top[key[0]]
        else:
            simulated = merge.merge(simulated, top, contribution.strategy, result.merge_lists)
        step.after = lookup(simulated, key)
        out.steps.append(step)
    last = out.steps[-1].after if out.steps else _MISSING
    out.consistent = _same(last, out.final)
    if not out.found:
        out.suggestions = _close_keys(result.pillar, key)
    return out


def _same(a: Any, b: Any) -> bool:
    if a is _MISSING or b is _MISSING:
        return a is b
    return bool(a == b)


def _full_data(contribution: Contribution) -> Any:
    data = contribution.data
    for part in reversed(contribution.nest):
        data = {part: data}
    return data


def _step(contribution: Contribution, key: tuple) -> Step | None:
    nest = tuple(contribution.nest)
    if len(key) <= len(nest):
        if tuple(str(p) for p in nest[: len(key)]) != tuple(str(p) for p in key):
            return None
        value = _full_data(contribution)
        value = lookup(value, key)
        return Step(contribution, "adds to it", value, key, _place(contribution, (), first_key=True))
    if tuple(str(p) for p in nest) != tuple(str(p) for p in key[: len(nest)]):
        return None
    inner = key[len(nest):]
    cur = contribution.data
    for depth, part in enumerate(inner):
        if not isinstance(cur, Mapping):
            at = nest + inner[:depth]
            return Step(contribution, "sets a parent", cur, at, _place(contribution, inner[:depth]))
        nxt = lookup(cur, (part,))
        if nxt is _MISSING:
            # the data holds key[0] (it went past it) but not the key: only a whole-top-level-key merge matters
            replaces_top = contribution.strategy == "replace" or contribution.strategy in _TOP_LEVEL_REPLACE
            if not replaces_top or len(nest) + depth < 1:
                return None
            where = _place(contribution, key[:1]) if not nest else _place(contribution, (), first_key=True)
            return Step(contribution, "replaces the top-level key", lookup(_full_data(contribution), key[:1]),
                        key[:1], where)
        cur = nxt
    effect = "sets"
    return Step(contribution, effect, cur, key, _place(contribution, inner))


def _place(contribution: Contribution, inner: tuple, first_key: bool = False) -> tuple[str | None, int | None]:
    places = contribution.places
    if first_key and places:
        tops = [where for path, where in places.items() if len(path) == 1]
        if tops:
            return min(tops, key=lambda w: (w[0] != contribution.display, w[1]))
    probe = tuple(inner)
    while probe:
        where = places.get(probe) or places.get(tuple(str(p) for p in probe))
        if where:
            return where
        probe = probe[:-1]
    return (contribution.display, None)


def _close_keys(pillar: Mapping, key: tuple) -> list[str]:
    import difflib

    paths: list[str] = []

    def walk(data: Any, prefix: tuple, depth: int) -> None:
        if not isinstance(data, Mapping) or depth > len(key) + 1:
            return
        for k, v in data.items():
            if str(k) == "_errors":
                continue
            path = prefix + (str(k),)
            paths.append(":".join(path))
            walk(v, path, depth + 1)

    walk(pillar, (), 1)
    return difflib.get_close_matches(":".join(key), paths, n=3, cutoff=0.5)


# -- presentation ---------------------------------------------------------------------

def _where(place: tuple[str | None, int | None]) -> str:
    file, line = place
    if not file:
        return ""
    return f"{file}:{line}" if line else file


def _via(contribution: Contribution) -> str:
    parts = []
    for link in contribution.chain:
        where = _where((link.file, link.line))
        if link.label == "top file":
            parts.append(f"top file {where}" if where else "top file")
        else:
            parts.append(f"included by {link.label} at {where}" if where else f"included by {link.label}")
    return " > ".join(parts)


def _source_name(contribution: Contribution) -> str:
    names = {"sls": "sls", "ext_pillar": "ext_pillar", "pillar_opts": "pillar_opts", "override": "override"}
    kind = names.get(contribution.source, contribution.source)
    if contribution.source in ("pillar_opts", "override"):
        return "pillar_opts (the master's opts under `master`)" if kind == "pillar_opts" else \
            "pillar override (pillar=... on the command line)"
    return f"{kind} {contribution.label}"


def _merge_words(step: Step, lists: bool) -> str:
    strategy = step.contribution.strategy
    if strategy == "replace":
        return "assigned (replaces any earlier value)"
    extra = ", lists merged" if lists and strategy not in ("aggregate", "overwrite", "none") else ""
    return f"merged by {strategy}{extra}"


def to_data(expl: Explanation, masker: Masker) -> dict[str, Any]:
    """The explanation as plain data (for --out json/yaml); secret values masked by masker."""
    steps = []
    for step in expl.steps:
        c = step.contribution
        steps.append({
            "source": c.source,
            "name": c.label,
            "file": step.place[0],
            "line": step.place[1],
            "line_kind": "source" if c.exact else "rendered",
            "via": [{"by": link.label, "file": link.file, "line": link.line} for link in c.chain],
            "nested_under": ":".join(str(p) for p in c.nest) or None,
            "effect": step.effect,
            "at": ":".join(str(p) for p in step.at),
            "value": masker.mask_value(step.at, step.value) if step.value is not _MISSING else None,
            "strategy": c.strategy,
            "value_after": masker.mask_value(expl.key, step.after) if step.after is not _MISSING else None,
            "note": c.note,
        })
    key = ":".join(expl.key)
    return {
        "minion": expl.minion,
        "key": key,
        "found": expl.found,
        "strategy": expl.strategy,
        "pillar_merge_lists": expl.merge_lists,
        "contributions": steps,
        "final": masker.mask_value(expl.key, expl.final) if expl.found else None,
        "suggestions": expl.suggestions,
    }


def to_text(expl: Explanation, masker: Masker) -> str:
    from runtime.cli.output import to_json

    def show(path: tuple, value: Any, limit: int = 240) -> str:
        if value is _MISSING:
            return "(absent)"
        text = to_json(masker.mask_value(path, value), indent=None)
        if len(text) > limit:
            return f"{text[:limit]}... ({len(text)} characters; --out json shows all)"
        return text

    key = ":".join(expl.key)
    lines = [f"{key} for minion {expl.minion}",
             f"pillar_source_merging_strategy: {expl.strategy}, pillar_merge_lists: "
             f"{str(expl.merge_lists).lower()}", ""]
    if not expl.steps:
        lines.append("No source contributes to this key.")
    for number, step in enumerate(expl.steps, 1):
        c = step.contribution
        where = _where(step.place)
        if where and not c.exact:
            where += " (line of the rendered file: the template's source line could not be told)"
        lines.append(f"{number}. {_source_name(c)}" + (f"  {where}" if where else ""))
        via = _via(c)
        if via:
            lines.append(f"     via: {via}")
        if c.nest:
            lines.append(f"     nested under {':'.join(str(p) for p in c.nest)} by the include's key:")
        if c.note:
            lines.append(f"     note: {c.note}")
        at = ":".join(str(p) for p in step.at)
        if step.effect == "sets":
            lines.append(f"     value: {show(step.at, step.value)}")
        elif step.effect == "sets a parent":
            lines.append(f"     sets {at} to {show(step.at, step.value)}, replacing {key}")
        elif step.effect == "replaces the top-level key":
            lines.append(f"     replaces {at} whole: {show(step.at, step.value)}")
        else:
            lines.append(f"     adds to it: {show(step.at, step.value)}")
        lines.append(f"     {_merge_words(step, expl.merge_lists)}; {key} is now {show(expl.key, step.after)}")
    lines.append("")
    if expl.found:
        lines.append(f"final value: {show(expl.key, expl.final)}")
    else:
        lines.append(f"{key} is not in the pillar of {expl.minion}.")
        if expl.suggestions:
            lines.append("Did you mean: " + ", ".join(expl.suggestions) + "?")
    if expl.steps and not expl.consistent:
        lines.append("note: the contributions above do not add up to the final value (a source that is not "
                     "tracked changed it).")
    return "\n".join(lines)
