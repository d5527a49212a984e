"""Pillar merge strategies (``pillar_source_merging_strategy``).

* ``smart`` (default) and ``recurse``: nested dicts merge key by key, other
  values are replaced; with ``pillar_merge_lists`` a list gets the items of the
  newer list that it does not hold yet, appended.
* ``aggregate`` and ``overwrite``: a top-level key of the newer data replaces the
  older value wholesale (without the yamlex renderer, aggregate has nothing
  more to aggregate, as in Salt).
* ``none``: merges like ``recurse`` but ignores ``pillar_merge_lists`` (as Salt
  does); the pillar compiler reads only one environment's top file under this strategy.
* ``list``: colliding scalar values become a list ``[old, new]``; lists are
  concatenated.  (Salt 3008's ``list`` strategy yields an empty pillar, a bug;
  this is the behaviour its documentation describes.)

All functions return new data and never modify their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.datacopy import deepcopy

STRATEGIES = ("smart", "recurse", "aggregate", "overwrite", "none", "list")


def _recurse(dest: dict[str, Any], upd: Mapping[str, Any], merge_lists: bool) -> dict[str, Any]:
    for key, val in upd.items():
        old = dest.get(key)
        if isinstance(old, dict) and isinstance(val, Mapping):
            dest[key] = _recurse(old, val, merge_lists)
        elif merge_lists and isinstance(old, list) and isinstance(val, list):
            dest[key] = old + [deepcopy(x) for x in val if x not in old]
        else:
            dest[key] = deepcopy(val)
    return dest


def merge_recurse(old: Mapping[str, Any], new: Mapping[str, Any], merge_lists: bool = False) -> dict[str, Any]:
    return _recurse(deepcopy(dict(old)), new, merge_lists)


def merge_overwrite(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = deepcopy(dict(old))
    for key, val in new.items():
        out[key] = deepcopy(val)
    return out


def merge_list(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = deepcopy(dict(old))
    for key, val in new.items():
        if key not in out:
            out[key] = deepcopy(val)
            continue
        prev = out[key]
        prev_list = prev if isinstance(prev, list) else [prev]
        new_list = val if isinstance(val, list) else [val]
        out[key] = prev_list + deepcopy(new_list)
    return out


def merge(old: Mapping[str, Any], new: Mapping[str, Any], strategy: str = "smart", merge_lists: bool = False) -> dict[str, Any]:
    """Merge new into old with a Salt merge strategy; returns a new dict."""
    if strategy in ("smart", "recurse"):
        return merge_recurse(old, new, merge_lists)
    if strategy == "none":
        return merge_recurse(old, new, False)
    if strategy in ("aggregate", "overwrite"):
        return merge_overwrite(old, new)
    if strategy == "list":
        return merge_list(old, new)
    raise ValueError(f"unknown merge strategy {strategy!r} (known: {', '.join(STRATEGIES)})")


def merge_into(old: dict[str, Any], new: Mapping[str, Any], strategy: str = "smart", merge_lists: bool = False) -> dict[str, Any]:
    """Like merge, but may reuse ``old`` (which the caller owns) to save copies."""
    if strategy in ("smart", "recurse"):
        return _recurse(old, new, merge_lists)
    if strategy == "none":
        return _recurse(old, new, False)
    return merge(old, new, strategy, merge_lists)


def nest_under(key: str, data: Any, delimiter: str = ":") -> Any:
    """'a:b' + data -> {'a': {'b': data}} (include ``key:`` and ext_pillar ``key``)."""
    for fragment in reversed(key.split(delimiter)):
        data = {fragment: data}
    return data
