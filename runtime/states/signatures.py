"""What an sls may call: the state functions saltpan has, and the arguments each takes.

``saltpan compile`` checks every state of a highstate against them before anything runs:

* a function saltpan does not have (``file.manged``) is an error, with the closest name ("did
  you mean 'file.managed'?"); Salt only finds out when the state runs;
* an argument is unknown when neither saltpan's function nor Salt 3008's names it and it is none
  of the keywords every state takes (requisites, ``onlyif``, ``order``, ...: Salt's list,
  captured in runtime/data/salt_state_args.json by tools/capture_salt_state_args.py).  Where Salt's
  function takes no ``**kwargs`` Salt fails the state ("... is an invalid keyword argument"); where
  it does, Salt passes the argument on silently, and a warning is given only for a likely typo
  (an argument close to a known one).  Both are warnings: the state may still do what was meant.

The executor's run-time message for a missing function uses ``suggest`` too.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.states.registry import REGISTRY

# keys of a low chunk the compiler adds, or that are never state arguments
_CHUNK_KEYS = frozenset({"state", "fun", "name", "names", "order", "name_order"})
# state modules whose arguments are those of the function they call (module.run, module.wait)
_PASS_THROUGH = frozenset({"module"})


@dataclass(frozen=True)
class Signature:
    """The arguments a state function takes: saltpan's and Salt's named ones."""

    args: frozenset[str]
    salt_kwargs: bool | None   # Salt's function takes **kwargs (any argument); None: Salt 3008 has no such function


@functools.cache
def _salt() -> dict[str, Any]:
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "salt_state_args.json")
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@functools.cache
def internal_keywords() -> frozenset[str]:
    """The keywords any state takes (Salt's STATE_INTERNAL_KEYWORDS, and saltpan's executor's)."""
    from runtime.executor import INTERNAL_KEYS

    return frozenset(_salt()["internal"]) | INTERNAL_KEYS | _CHUNK_KEYS


@functools.cache
def functions() -> dict[str, Signature]:
    """Every state function saltpan has ("mod.fun"), with its signature."""
    import importlib

    salt_states: dict[str, Any] = _salt()["states"]
    out: dict[str, Signature] = {}
    for name, entry in REGISTRY.items():
        if entry.impl is None:
            continue
        module = importlib.import_module(entry.impl)
        for fun in getattr(module, "__all__", ()):
            func = getattr(module, fun, None)
            if not callable(func):
                continue
            params = [p.name for p in inspect.signature(func).parameters.values()
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)][1:]   # not ctx
            salt = salt_states.get(f"{name}.{fun}")
            out[f"{name}.{fun}"] = Signature(frozenset(params) | frozenset((salt or {}).get("args") or ()),
                                             None if salt is None else bool(salt.get("kwargs")))
    return out


def suggest(mod: str, fun: str) -> str | None:
    """The state function closest to ``mod.fun`` (a misspelt module or function), or None."""
    known = functions()
    close = difflib.get_close_matches(f"{mod}.{fun}", sorted(known), n=1, cutoff=0.75)
    if not close:
        same_module = sorted(k for k in known if k.startswith(f"{mod}."))
        close = difflib.get_close_matches(f"{mod}.{fun}", same_module, n=1, cutoff=0.6)
    return close[0] if close else None


def foreign_reason(mod: str) -> str | None:
    """Why a module of another OS (macpackage, chocolatey) cannot run here, or None."""
    entry = REGISTRY.get(mod)
    return entry.foreign if entry is not None else None


@dataclass(frozen=True)
class Finding:
    error: bool          # an error (the state cannot run) or a warning
    message: str


def check_chunk(chunk: Mapping[str, Any]) -> list[Finding]:
    """What is wrong with one low chunk's function and arguments (see the module doc)."""
    mod, fun = str(chunk.get("state")), str(chunk.get("fun"))
    name = f"{mod}.{fun}"
    signature = functions().get(name)
    if signature is None:
        reason = foreign_reason(mod)
        if reason is not None:
            return [Finding(False, f"state '{name}' only runs on another OS ({reason})")]
        hint = suggest(mod, fun)
        module_known = mod in REGISTRY and REGISTRY[mod].impl is not None
        why = f"module '{mod}' has no function '{fun}'" if module_known else f"there is no state module '{mod}'"
        return [Finding(True, f"state '{name}' is not available: {why}"
                              + (f" (did you mean '{hint}'?)" if hint else ""))]
    findings: list[Finding] = []
    if mod in _PASS_THROUGH:
        return findings
    known = signature.args | internal_keywords()
    for arg in chunk:
        if not isinstance(arg, str) or arg.startswith("__") or arg in known:
            continue
        close = difflib.get_close_matches(arg, sorted(known), n=1, cutoff=0.75)
        if signature.salt_kwargs and not close:
            continue   # Salt passes it to the function's **kwargs: no reason to think it a typo
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        salt_fails = " (Salt fails the state: invalid keyword argument)" if signature.salt_kwargs is False else ""
        findings.append(Finding(False, f"'{arg}' is not an argument of {name}{hint}: it is ignored{salt_fails}"))
    return findings
