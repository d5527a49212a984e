"""Bounding the events minions fire on the master's bus (``max_event_size``, Salt's key).

Salt trims an event larger than ``max_event_size`` (``salt.utils.dicttrim``): it walks the
data (into nested maps, not lists) and replaces every value larger than half the limit with
the string ``"VALUE_TRIMMED"``, then a fifth less, and so on down to nothing, stopping as soon as
the event fits.  Reactors of a Salt user see the same marker here.  Salt measures values with
``sys.getsizeof`` and may give up with the event still too large; we measure the encoded
(msgpack) size and drop an event that cannot be brought under the limit, so the bound holds.
"""

from __future__ import annotations

from typing import Any

from runtime import codec

TRIMMED = "VALUE_TRIMMED"
_STEPS = (50, 40, 30, 20, 10, 0)      # percent of the limit a single value may take, pass after pass


MAX_TRIM_ENTRIES = 100_000            # an oversized event with more map entries is dropped, not trimmed


def bound_event(data: dict[str, Any], max_size: int) -> dict[str, Any] | None:
    """``data`` when its encoding fits ``max_size`` bytes, else a trimmed copy that fits, else
    None (the event must be dropped)."""
    if len(codec.pack(data)) <= max_size:
        return data
    entries = [0]
    trimmed = _copy_maps(data, entries)
    if entries[0] > MAX_TRIM_ENTRIES:       # trimming would cost more than the event is worth
        return None
    for percent in _STEPS:
        _trim(trimmed, max_size * percent / 100)
        if len(codec.pack(trimmed)) <= max_size:
            return trimmed
    return None


def _copy_maps(value: Any, entries: list[int]) -> Any:
    if not isinstance(value, dict):
        return value
    entries[0] += len(value)
    return {k: _copy_maps(v, entries) for k, v in value.items()}


def _size(value: Any) -> int:
    """The encoded size of a value (exact enough for scalars without encoding them)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass")) + 5
    if isinstance(value, (bytes, int, float, bool)) or value is None:
        return (len(value) + 5) if isinstance(value, bytes) else 9
    return len(codec.pack(value))


def _trim(node: dict[str, Any], limit: float) -> None:
    for key, value in node.items():
        if isinstance(value, dict):
            _trim(value, limit)
        elif value != TRIMMED and _size(value) > limit:
            node[key] = TRIMMED
