"""The one registry of state modules: what exists, and what the compiler and executor know about it.

Each entry names a Salt state module (``file``, ``pkgrepo``, ``postgres_user`` ...), the Python
module under ``runtime/states/`` that implements it, and the facts the rest of saltpan needs
without importing that module:

* ``mod_watch`` -- the module has a ``mod_watch`` function. The state compiler keeps a ``watch``
  requisite only for such modules and turns it into ``require`` elsewhere (Salt's
  ``_reconcile_watch_req``); the executor calls ``mod_watch`` when a watched state changed.
* ``own_run_check`` -- the module evaluates ``unless``/``onlyif``/``creates`` itself (Salt's
  ``mod_run_check`` hook); for every other module the executor evaluates them before the call.
  No module of Salt 3008 uses the hook (``cmd`` dropped its own in 3001), nor does any here.
* ``foreign`` -- the module exists in Salt but only for another OS (``macpackage``,
  ``chocolatey``): a state using it fails with Salt's "was not found ... __virtual__ returned
  False" reason instead of "not available".

A module may also define ``unavailable() -> str | None``: why it cannot work on this host right
now (Salt's ``__virtual__`` returning False: a missing command or client), checked when one of
its states runs. ``""`` means "not available" without a reason, as Salt words it for some.

``compiler/`` never imports this module: the caller hands ``has_mod_watch`` to the compiler.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

StateFunction = Callable[..., dict]


@dataclass(frozen=True)
class StateModule:
    name: str  # Salt's state module name, as written in an sls (``pkgrepo``)
    mod_watch: bool = False
    own_run_check: bool = False
    foreign: str | None = None  # Salt's __virtual__ reason on Linux for a module of another OS

    @property
    def impl(self) -> str | None:
        """The Python module implementing it, or None for a module of another OS."""
        return None if self.foreign else f"runtime.states.{self.name}"


_MODULES = (
    StateModule("file"),
    StateModule("cmd", mod_watch=True),
    StateModule("test", mod_watch=True),
    StateModule("pkg", mod_watch=True),
    StateModule("service", mod_watch=True),
    StateModule("user"),
    StateModule("group"),
    StateModule("pip"),
    StateModule("pkgrepo"),
    StateModule("module", mod_watch=True),
    StateModule("mount", mod_watch=True),
    StateModule("ssh_auth"),
    StateModule("ssh_known_hosts"),
    StateModule("alternatives"),
    StateModule("archive"),
    StateModule("at", mod_watch=True),
    StateModule("cron"),
    StateModule("debconf"),
    StateModule("event", mod_watch=True),
    StateModule("git"),
    StateModule("host"),
    StateModule("ini"),
    StateModule("locale"),
    StateModule("postgres_user"),
    StateModule("postgres_database"),
    StateModule("postgres_schema"),
    StateModule("postgres_extension"),
    StateModule("postgres_tablespace"),
    StateModule("sysctl"),
    StateModule("timezone"),
    StateModule("macpackage", foreign="Only supported on Mac OS"),
    StateModule("chocolatey", foreign="chocolatey module could not be loaded"),
)

REGISTRY: dict[str, StateModule] = {module.name: module for module in _MODULES}


def has_mod_watch(state: str) -> bool:
    """Whether ``state`` keeps its ``watch`` requisites (what the state compiler is given)."""
    entry = REGISTRY.get(state)
    return bool(entry and entry.mod_watch)


def runs_own_checks(state: str) -> bool:
    """Whether ``state`` evaluates ``unless``/``onlyif``/``creates`` itself."""
    entry = REGISTRY.get(state)
    return bool(entry and entry.own_run_check)


@dataclass(frozen=True)
class Missing:
    """Why ``mod.fun`` cannot run: Salt's ``Reason:`` line of "State 'mod.fun' was not found"."""

    reason: str


def _module(entry: StateModule) -> ModuleType | None:
    return importlib.import_module(entry.impl) if entry.impl else None


def resolve(mod: str, fun: str) -> StateFunction | Missing:
    """The state function ``mod.fun``, or why it cannot be used on this host."""
    entry = REGISTRY.get(mod)
    if entry is None or fun.startswith("_"):
        return Missing(f"'{mod}.{fun}' is not available.")
    if entry.foreign:
        return Missing(f"'{mod}' __virtual__ returned False: {entry.foreign}")
    module = _module(entry)
    assert module is not None
    check = getattr(module, "unavailable", None)
    if check is not None:
        why = check()
        if why is not None:
            return Missing(f"'{mod}' __virtual__ returned False: {why}" if why else f"'{mod}.{fun}' is not available.")
    func = getattr(module, fun, None)
    exported = getattr(module, "__all__", ())
    if func is None or not callable(func) or fun not in exported:
        return Missing(f"'{mod}.{fun}' is not available.")
    return func


def lookup(mod: str, fun: str) -> StateFunction | None:
    """The state function mod.fun, or None when it does not exist or cannot run here."""
    found = resolve(mod, fun)
    return None if isinstance(found, Missing) else found
