"""match: does this minion match a target (glob, pcre, list, grain, pillar, ipcidr, compound)?"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from compiler import match as matching
from compiler import saltdata
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.match")


def _minion(env: ModuleEnv, minion_id: Any = None) -> matching.Minion:
    own = env.opts.get("id") or env.grains.get("id") or ""
    return matching.Minion(str(minion_id) if minion_id is not None else str(own), env.grains, env.pillar)


def _match(env: ModuleEnv, tgt_type: str, tgt: Any, minion_id: Any = None, delimiter: str = ":") -> bool:
    try:
        return matching.match_one(tgt_type, tgt, _minion(env, minion_id), env.opts.get("nodegroups") or {},
                                  delimiter)
    except Exception as exc:  # noqa: BLE001 - Salt logs a bad target and answers False
        log.error("match.%s: %s", tgt_type, exc)
        return False


@pure
def compound(env: ModuleEnv, tgt: Any, minion_id: Any = None) -> bool:
    """Compound target (G@ E@ L@ I@ P@ J@ S@ N@, and/or/not)."""
    return _match(env, "compound", tgt, minion_id)


@pure
def glob(env: ModuleEnv, tgt: Any, minion_id: Any = None) -> bool:
    """Glob on the minion id."""
    return _match(env, "glob", tgt, minion_id)


@pure
def pcre(env: ModuleEnv, tgt: Any, minion_id: Any = None) -> bool:
    """Regular expression on the minion id."""
    return _match(env, "pcre", tgt, minion_id)


@pure(name="list")
def list_(env: ModuleEnv, tgt: Any, minion_id: Any = None) -> bool:
    """The minion id is in the list (a list or a comma-separated string)."""
    return _match(env, "list", tgt, minion_id)


@pure
def grain(env: ModuleEnv, tgt: Any, delimiter: str = ":") -> bool:
    """Grain glob: 'os:Debian'."""
    return _match(env, "grain", tgt, None, delimiter)


@pure
def grain_pcre(env: ModuleEnv, tgt: Any, delimiter: str = ":") -> bool:
    """Grain regular expression."""
    return _match(env, "grain_pcre", tgt, None, delimiter)


@pure
def pillar(env: ModuleEnv, tgt: Any, delimiter: str = ":") -> bool:
    """Pillar glob: 'role:web'."""
    return _match(env, "pillar", tgt, None, delimiter)


@pure
def pillar_pcre(env: ModuleEnv, tgt: Any, delimiter: str = ":") -> bool:
    """Pillar regular expression."""
    return _match(env, "pillar_pcre", tgt, None, delimiter)


@pure
def ipcidr(env: ModuleEnv, tgt: Any) -> bool:
    """One of the minion's addresses (ipv4/ipv6 grains) is in the network."""
    return _match(env, "ipcidr", tgt)


@pure
def data(env: ModuleEnv, tgt: Any) -> bool:
    """Minion datastore match: saltpan has no minion datastore, so never."""
    return False


_TARGETS = {"compound": compound, "glob": glob, "pcre": pcre, "list": list_, "grain": grain,
            "grain_pcre": grain_pcre, "pillar": pillar, "pillar_pcre": pillar_pcre, "ipcidr": ipcidr, "data": data}


def _target(tgt_type: str) -> Any:
    found = _TARGETS.get(tgt_type)
    if found is None:
        raise KeyError(tgt_type)
    return found


@pure
def filter_by(env: ModuleEnv, lookup: Mapping, tgt_type: str = "compound", minion_id: Any = None, merge: Any = None,
              merge_lists: bool = False, default: str = "default") -> Any:
    """The value of the first key of lookup that matches this minion as a target of tgt_type."""
    matcher = _target(tgt_type)
    for key in lookup:
        matched = matcher(env, key, minion_id) if minion_id and tgt_type in ("compound", "glob", "pcre", "list") \
            else matcher(env, key)
        if matched:
            if merge:
                if not isinstance(merge, Mapping):
                    raise ValueError("filter_by merge argument must be a dictionary.")
                if lookup[key] is None:
                    return merge
                saltdata.update(lookup[key], copy.deepcopy(merge), merge_lists=merge_lists)
            return lookup[key]
    return lookup.get(default, None)


@pure
def search_by(env: ModuleEnv, lookup: Mapping, tgt_type: str = "compound", minion_id: Any = None) -> list | None:
    """The keys of lookup whose list holds a target matching this minion (None when none does)."""
    matcher = _target(tgt_type)
    found = []
    for key, targets in lookup.items():
        for target in targets:
            matched = matcher(env, target, minion_id) if minion_id and tgt_type in ("compound", "glob", "pcre",
                                                                                     "list") else matcher(env, target)
            if matched:
                found.append(key)
    return found or None


def ifelse(env: ModuleEnv, *args: Any, tgt_type: str = "compound", minion_id: Any = None, merge: Any = None,
           merge_lists: bool = False) -> Any:
    """Salt's `ifelse` Jinja global: target, value, target, value, ..., default."""
    if len(args) % 2 == 0:
        raise ValueError("The ifelse function must have an odd number of arguments!")
    if len(args) == 1:
        return args[0]
    default_key = "SALT_IFELSE_FUNCTION_DEFAULT"
    keys = ["*" if k is True else "SALT_IFELSE_MATCH_NOTHING" if k is False else k for k in args[::2]]
    lookup = dict(zip(keys, args[1::2], strict=False))
    lookup[default_key] = args[-1]
    return filter_by(env, lookup, tgt_type, minion_id, merge, merge_lists, default_key)
