"""publisher_acl: which local users may publish which functions to which minions.

Config (Salt's shape)::

    publisher_acl:
      fred:
        - test.ping                 # any minion
        - 'web*':                   # minions whose id matches the glob
            - cmd.run
            - 'state.*'

Rules (SECURITY.md class 10): a function must match an entry as a whole
(``test.ping`` never allows ``test.pingX``), function lists and comma-joined
names are refused, and every minion the target reaches must be allowed for
that function — a target that reaches no known minion is refused too.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from runtime.protocol.client import valid_function_name  # the protocol's rule


def _fun_allowed(fun: str, patterns: list) -> bool:
    return any(isinstance(p, str) and fnmatch.fnmatchcase(fun, p) for p in patterns)


def check(acl: Mapping[str, Any], user: str, fun: str, minions: list[str]) -> str | None:
    """None when allowed, else the reason for refusing."""
    if not valid_function_name(fun):
        return f"function {fun!r} is not a single module.function name"
    entries = acl.get(user)
    if not isinstance(entries, list):
        return f"user {user!r} is not in publisher_acl"
    if not minions:
        return "the target matches no accepted minion"
    for minion in minions:
        allowed = False
        for entry in entries:
            if isinstance(entry, str):
                if fnmatch.fnmatchcase(fun, entry):
                    allowed = True
            elif isinstance(entry, dict):
                for glob, funs in entry.items():
                    if fnmatch.fnmatchcase(minion, str(glob)) and isinstance(funs, list) and _fun_allowed(fun, funs):
                        allowed = True
            if allowed:
                break
        if not allowed:
            return f"user {user!r} may not run {fun} on {minion}"
    return None
