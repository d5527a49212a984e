"""sys: list_functions, list_modules, doc, argspec, list_state_modules, list_state_functions (saltpan's
functions and the custom modules synced to this host)."""

from __future__ import annotations

import fnmatch
import inspect
from typing import TYPE_CHECKING, Any

from runtime import modules
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _all_functions(env: ModuleEnv) -> dict[str, Any]:
    """Every function of this host by name: saltpan's and the synced custom ones."""
    out: dict[str, Any] = {name: fn.func for name, fn in modules.registry().items()}
    out.update(modules.custom_functions(env))
    return out


@pure
def list_functions(env: ModuleEnv, *patterns: str) -> list[str]:
    """Function names, optionally filtered by globs or module names."""
    names = sorted(_all_functions(env))
    if not patterns:
        return names
    out = []
    for name in names:
        for pat in patterns:
            if fnmatch.fnmatch(name, pat) or name.startswith(pat + "."):
                out.append(name)
                break
    return out


@pure
def list_modules(env: ModuleEnv, *patterns: str) -> list[str]:
    """Module names (optionally only those matching the globs given)."""
    names = sorted({name.split(".", 1)[0] for name in _all_functions(env)})
    return [n for n in names if not patterns or any(fnmatch.fnmatch(n, p) for p in patterns)]


@pure
def doc(env: ModuleEnv, *names: str) -> dict[str, str]:
    """Docstrings of functions (all, or the names / modules given)."""
    functions = _all_functions(env)
    return {name: modules.doc_of(functions[name]) for name in list_functions(env, *names)}


@pure
def argspec(env: ModuleEnv, *names: str) -> dict[str, Any]:
    """{function: {args, defaults, varargs, kwargs}} as Salt's sys.argspec (the function's own
    parameters: saltpan's first, the module environment, left out)."""
    functions = _all_functions(env)
    out: dict[str, Any] = {}
    for name in list_functions(env, *names):
        func = functions[name]
        params = list(inspect.signature(func).parameters.values())
        if name in modules.registry():
            params = params[1:]
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        defaults = [p.default for p in positional if p.default is not p.empty]
        out[name] = {"args": [p.name for p in positional] + [p.name for p in params if p.kind is p.KEYWORD_ONLY],
                     "defaults": defaults or None,
                     "varargs": next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None),
                     "kwargs": next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)}
    return out


@pure
def list_state_modules(env: ModuleEnv, *patterns: str) -> list[str]:
    """The state modules of this host (saltpan's and synced custom ones)."""
    names = sorted(set(_state_functions(env)) | {n.split(".", 1)[0] for n in _custom_states(env)})
    return [n for n in names if not patterns or any(fnmatch.fnmatch(n, p) for p in patterns)]


@pure
def list_state_functions(env: ModuleEnv, *patterns: str) -> list[str]:
    """The state functions of this host ('mod.fun'), optionally filtered by globs or module names."""
    names = sorted({f"{mod}.{fun}" for mod, funs in _state_functions(env).items() for fun in funs}
                   | set(_custom_states(env)))
    if not patterns:
        return names
    return [n for n in names if any(fnmatch.fnmatch(n, p) or n.startswith(p + ".") for p in patterns)]


def _state_functions(env: ModuleEnv) -> dict[str, list[str]]:
    import importlib

    from runtime.states.registry import REGISTRY

    out = {}
    for mod, entry in REGISTRY.items():
        if entry.impl and not entry.foreign:
            out[mod] = list(getattr(importlib.import_module(entry.impl), "__all__", ()))
    return out


def _custom_states(env: ModuleEnv) -> list[str]:
    return list(modules.custom_modules(env).states)
