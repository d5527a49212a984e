"""The Salt mine on the master: what minions stored (bank ``mine`` of the minion data cache) and
what another minion may read of it (Salt 3008's ``_mine_get``).

A minion asking for ``mine.get TGT FUN [TGT_TYPE]`` gets, for each minion matching the target:

* only the functions the master's ``mine_get`` ACL grants it, when ``mine_get`` is configured:
  ``{minion id regex: [function regex, ...]}``, both matched from the start of the name as Salt
  does (``re.match``); a minion no key matches gets nothing;
* only entries whose minion-side ACL (``allow_tgt``/``allow_tgt_type``, stored with the entry by
  ``mine.send``/``mine_functions``) matches the asking minion.

Targets are matched as Salt's mine does: against the key store and the minion data cache, not
greedily (a minion without cached grains matches no grain target), and ``pillar`` meaning
``pillar_exact``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from compiler import match

log = logging.getLogger("saltpan.master.mine")

ACL_ID = "__saltmine_acl__"        # Salt's marks of an entry carrying a minion-side ACL
ACL_DATA = "__data__"
BANK = "mine"


def requested_functions(fun: str | list[str]) -> tuple[list[str], bool]:
    """The functions asked for and whether the answer is keyed by function (several asked)."""
    if isinstance(fun, str):
        names = sorted(set(fun.split(",")))
        return names, len(names) > 1
    return list(fun), True


def allowed_functions(acl: Any, minion_id: str, functions: list[str]) -> list[str]:
    """The functions of ``functions`` the ``mine_get`` ACL grants ``minion_id`` (all without an ACL)."""
    if acl is None:
        return functions
    if not isinstance(acl, Mapping):
        log.error("mine_get must be a mapping of minion id regexes to lists of function regexes: no mine "
                  "data is served")
        return []
    perms: list[str] = []
    for pattern, granted in acl.items():
        if _matches(str(pattern), minion_id, "minion id") and isinstance(granted, list):
            perms.extend(str(g) for g in granted)
    return [fun for fun in functions if any(_matches(perm, fun, "function") for perm in perms)]


def _matches(pattern: str, value: str, what: str) -> bool:
    try:
        return re.match(pattern, value) is not None
    except re.error as exc:
        log.error("mine_get: %s pattern %r is not a regular expression (%s): it grants nothing", what, pattern, exc)
        return False


def matching_minions(tgt: str | list[str], tgt_type: str, accepted: Iterable[str], grains: Mapping[str, Any],
                     pillars: Mapping[str, Any], nodegroups: Mapping[str, Any]) -> list[str]:
    """Accepted minions whose cached data matches the target (no data: no grain/pillar match)."""
    if tgt_type == "pillar":
        tgt_type = "pillar_exact"
    needs_pillar = tgt_type in ("pillar_pcre", "pillar_exact", "compound", "nodegroup")
    out = []
    for minion_id in sorted(set(accepted)):
        minion = match.Minion(minion_id, grains.get(minion_id) or {},
                              (pillars.get(minion_id) or {}) if needs_pillar else {})
        if match.match_one(tgt_type, tgt, minion, nodegroups):
            out.append(minion_id)
    return out


def entry_value(entry: Any) -> Any:
    """The data of a mine entry, unwrapped from its minion-side ACL when it carries one."""
    if isinstance(entry, Mapping) and ACL_ID in entry:
        return entry.get(ACL_DATA)
    return entry


def lookup(requester: str, tgt: str | list[str], fun: str | list[str], tgt_type: str, *,
           acl: Any, accepted: Iterable[str], mines: Mapping[str, Any], grains: Mapping[str, Any],
           pillars: Mapping[str, Any], nodegroups: Mapping[str, Any]) -> dict[str, Any]:
    """Salt's ``_mine_get`` answer for ``requester``: ``{minion: data}`` for one function,
    ``{function: {minion: data}}`` for several.  Raises match.MatchError for a malformed target."""
    functions, by_function = requested_functions(fun)
    functions = allowed_functions(acl, requester, functions)
    if not functions:
        return {}
    accepted = list(accepted)
    minions = matching_minions(tgt, tgt_type, accepted, grains, pillars, nodegroups)
    allowed_readers: dict[tuple[Any, str], bool] = {}
    out: dict[str, Any] = {}
    for minion_id in minions:
        data = mines.get(minion_id)
        if not isinstance(data, Mapping):
            continue
        for function in functions:
            if function not in data:
                continue
            entry = data[function]
            if isinstance(entry, Mapping) and ACL_ID in entry and entry.get("allow_tgt"):
                key = (_hashable(entry["allow_tgt"]), str(entry.get("allow_tgt_type") or "glob"))
                if key not in allowed_readers:
                    allowed_readers[key] = _reader_allowed(requester, entry, accepted, grains, pillars, nodegroups)
                if not allowed_readers[key]:
                    continue
            value = entry_value(entry)
            if by_function:
                out.setdefault(function, {})[minion_id] = value
            else:
                out[minion_id] = value
    return out


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else str(value)


def _reader_allowed(requester: str, entry: Mapping[str, Any], accepted: list[str], grains: Mapping[str, Any],
                    pillars: Mapping[str, Any], nodegroups: Mapping[str, Any]) -> bool:
    tgt_type = str(entry.get("allow_tgt_type") or "glob")
    try:
        return requester in matching_minions(entry["allow_tgt"], tgt_type, accepted, grains, pillars, nodegroups)
    except match.MatchError as exc:
        log.warning("mine entry with a malformed allow_tgt %r (%s): readable by no one", entry["allow_tgt"], exc)
        return False
