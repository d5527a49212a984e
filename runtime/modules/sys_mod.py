"""sys: list_functions, list_modules, doc."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from runtime import modules
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


@pure
def list_functions(env: ModuleEnv, *patterns: str) -> list[str]:
    """Function names, optionally filtered by globs or module names."""
    names = modules.list_functions()
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
def list_modules(env: ModuleEnv) -> list[str]:
    """Module names."""
    return sorted(modules.MODULES)


@pure
def doc(env: ModuleEnv, *names: str) -> dict[str, str]:
    """Docstrings of functions (all, or the names / modules given)."""
    out = {}
    for name in list_functions(env, *names):
        out[name] = modules.doc_of(modules.lookup(name))
    return out
