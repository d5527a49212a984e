"""``deepcopy`` for pillar-shaped data, with ``copy.deepcopy``'s semantics and a fraction of its cost.

Plain dicts, lists and immutable scalars (what YAML, JSON and most templates
produce) are copied inline; anything else goes to ``copy.deepcopy`` with the
same memo.  The memo is kept exactly as ``copy.deepcopy`` keeps it, so data
that shares a container (a YAML alias) or contains itself is copied with the
same sharing.
"""

from __future__ import annotations

import copy
from typing import Any

_ATOMIC = frozenset({str, int, float, bool, type(None), bytes, complex})


def deepcopy(data: Any, memo: dict[int, Any] | None = None) -> Any:
    """A deep copy of data (same result as ``copy.deepcopy(data)``)."""
    kind = type(data)
    if kind in _ATOMIC:
        return data
    if memo is None:
        memo = {}
    if kind is dict:
        found = memo.get(id(data))
        if found is not None:
            return found
        out: dict[str, Any] = {}
        memo[id(data)] = out
        _keep_alive(data, memo)
        for key, value in data.items():
            out[key if type(key) in _ATOMIC else deepcopy(key, memo)] = (
                value if type(value) in _ATOMIC else deepcopy(value, memo))
        return out
    if kind is list:
        found = memo.get(id(data))
        if found is not None:
            return found
        items: list[Any] = []
        memo[id(data)] = items
        _keep_alive(data, memo)
        append = items.append
        for value in data:
            append(value if type(value) in _ATOMIC else deepcopy(value, memo))
        return items
    return copy.deepcopy(data, memo)


def _keep_alive(data: Any, memo: dict[int, Any]) -> None:
    # as copy.deepcopy does: the originals stay referenced while their ids key the memo
    try:
        memo[id(memo)].append(data)
    except KeyError:
        memo[id(memo)] = [data]
