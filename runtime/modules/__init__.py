"""Execution modules for masterless use and for minions.

Each module ``runtime/modules/<name>.py`` exposes plain functions
``fun(env: ModuleEnv, *args, **kwargs)``; ``__all__`` lists the public ones.
``call`` dispatches ``"mod.fun"`` with Salt-style arguments, ``lookup`` finds
one function, ``list_functions`` enumerates them (for ``sys.list_functions``).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from compiler.roots import FileSource
    from runtime.minion.jobs import JobRegistry

MODULES = ("test", "cmd", "grains", "pillar", "state", "saltutil", "sys", "file")


class CommandError(Exception):
    """A module function failed in a way the caller should see (not a crash)."""


class FunctionNotFound(CommandError):
    pass


class PillarRefresh(Protocol):
    """Replace the in-memory pillar with a fresh one (``saltutil.refresh_pillar``); with ``wait``,
    return once it is in memory (within ``timeout`` seconds), False when it did not arrive."""

    def __call__(self, *, wait: bool = True, timeout: float | None = None, clean_cache: bool = True) -> bool: ...


@dataclass
class ModuleEnv:
    """What execution module functions may use on this minion (or masterless host)."""

    opts: dict[str, Any]
    grains: dict[str, Any]
    pillar: dict[str, Any]  # the in-memory pillar (pillar.raw / pillar.get read it)
    # compile a fresh pillar (pillar.items, state runs): (pillar, errors)
    fresh_pillar: Callable[[], tuple[dict[str, Any], list[Any]]] | None = None
    # replace the in-memory pillar with a fresh one (saltutil.refresh_pillar)
    refresh_pillar: PillarRefresh | None = None
    # read the grains again (saltutil.refresh_grains): True once done
    refresh_grains: Callable[[], bool] | None = None
    # the state tree this host compiles highstates from
    state_source: FileSource | None = None
    # fire an event on the local bus / to the master: True when it was handed over
    fire_event: Callable[[str, Mapping[str, Any]], bool] | None = None
    jid: str | None = None
    # running jobs on this minion (saltutil.running / find_job / kill_job)
    jobs: JobRegistry | None = None
    # the job's exit status as Salt's __context__["retcode"]: cmd.* set the command's, test.retcode
    # the one asked for; the minion returns it and `saltpan run` exits 1 when one is not 0
    retcode: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def lookup(name: str) -> Callable[..., Any]:
    """The function 'mod.fun', or FunctionNotFound with a clear message."""
    if not isinstance(name, str) or name.count(".") != 1:
        raise FunctionNotFound(f"'{name}' is not a function name of the form module.function")
    mod, fun = name.split(".")
    if mod not in MODULES or fun.startswith("_"):
        raise FunctionNotFound(f"'{name}' is not available")
    module = importlib.import_module(f"runtime.modules.{mod}_mod")
    exported = getattr(module, "__all__", ())
    func = getattr(module, fun, None)
    if fun not in exported or not callable(func):
        raise FunctionNotFound(f"'{name}' is not available")
    return func


def call(env: ModuleEnv, name: str, args: list | tuple = (), kwargs: Mapping[str, Any] | None = None) -> Any:
    func = lookup(name)
    kwargs = dict(kwargs or {})
    try:
        inspect.signature(func).bind(env, *args, **kwargs)
    except TypeError as exc:
        raise CommandError(f"Passed invalid arguments to {name}: {exc}\n\nUsage:\n{doc_of(func)}") from None
    return func(env, *args, **kwargs)


def doc_of(func: Callable[..., Any]) -> str:
    return inspect.getdoc(func) or ""


def list_functions() -> list[str]:
    out: list[str] = []
    for mod in MODULES:
        module = importlib.import_module(f"runtime.modules.{mod}_mod")
        out.extend(f"{mod}.{fun}" for fun in getattr(module, "__all__", ()))
    return sorted(out)


def function_table(env: ModuleEnv, exclude_prefixes: tuple[str, ...] = ("state.", "saltutil.")) -> dict[str, Any]:
    """Every execution function bound to env, as the ``salt`` table state templates see when they
    are rendered on a minion (Salt formulas call salt['cmd.run'], salt['file.file_exists'] ...).
    Functions that would recurse into a state run or change the minion are left out."""
    table: dict[str, Any] = {}
    for name in list_functions():
        if name.startswith(exclude_prefixes):
            continue

        def bound(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            return call(env, _name, args, kwargs)

        table[name] = bound
    return table
