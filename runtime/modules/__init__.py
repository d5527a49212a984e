"""Execution modules: the ONE registry of execution functions.

Each module ``runtime/modules/<name>_mod.py`` (with the private modules its ``PARTS`` names)
exposes plain functions
``fun(env: ModuleEnv, *args, **kwargs)``, each declared with a decorator of
``runtime.modules.registry`` (``@pure``, ``@reads_host``, ``@runs_command``,
``@job``) that says what it needs; the decorated functions are the module's
public functions.  Everything that calls execution functions goes through here:

* ``call`` / ``lookup`` / ``list_functions``: ``saltpan call``, jobs on a minion,
  ``sys.list_functions``;
* ``function_table``: the functions state modules and the executor call;
* ``live_functions`` / ``offline_functions``: the ``salt`` table templates see,
  handed to the compiler as a factory (compiler/salt_functions.py).  Live (a
  minion, ``call --local``): every function but jobs runs.  Offline (``saltpan
  compile``, the master's pillar): pure functions run; functions that read the
  host or run commands never touch the compiling machine and answer what Salt
  answers on a host where the thing is absent, each call noted in an
  ``OfflineReport`` (``compile --strict`` prints them with file:line).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from runtime.modules import custom
from runtime.modules.registry import Access, declared

if TYPE_CHECKING:
    from compiler.roots import FileSource
    from compiler.salt_functions import FunctionMap, FunctionsFactory
    from runtime.minion.jobs import JobRegistry
    from runtime.protocol.session import Requester

MODULES = ("alternatives", "cmd", "config", "cp", "defaults", "disk", "dnsutil", "environ", "file", "git", "grains",
           "group", "log", "match", "mine", "network", "pillar", "pkg", "saltutil", "service", "slsutil", "state",
           "status", "sys", "test", "user")


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
    """What execution module functions may use on this minion (or masterless host, or offline compile)."""

    opts: dict[str, Any]
    grains: dict[str, Any]
    pillar: dict[str, Any]  # the in-memory pillar (pillar.raw / pillar.get read it)
    # compile a fresh pillar (pillar.items, state runs): (pillar, errors)
    fresh_pillar: Callable[[], tuple[dict[str, Any], list[Any]]] | None = None
    # replace the in-memory pillar with a fresh one (saltutil.refresh_pillar)
    refresh_pillar: PillarRefresh | None = None
    # read the grains again (saltutil.refresh_grains): True once done
    refresh_grains: Callable[[], bool] | None = None
    # the state tree this host compiles highstates from (cp.list_*, slsutil.file_exists)
    state_source: FileSource | None = None
    # the pillar tree (pillar.file_exists), when this host has one
    pillar_source: FileSource | None = None
    # fire an event on the local bus / to the master: True when it was handed over
    fire_event: Callable[[str, Mapping[str, Any]], bool] | None = None
    # one sealed request to the master (a minion with a master: the mine, cp's transfers); None
    # masterless and offline
    master: Requester | None = None
    jid: str | None = None
    # running jobs on this minion (saltutil.running / find_job / kill_job)
    jobs: JobRegistry | None = None
    # the job's exit status as Salt's __context__["retcode"]: cmd.* set the command's, test.retcode
    # the one asked for; the minion returns it and `saltpan run` exits 1 when one is not 0
    retcode: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Function:
    """One execution function of the registry."""

    name: str
    func: Callable[..., Any]
    access: Access
    absent: Callable[..., Any] | None  # offline: Salt's answer where the thing is absent

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.func) or ""


@functools.cache
def _module_functions(mod: str) -> dict[str, Function]:
    """The declared functions of ``<mod>_mod.py`` and of the private modules its ``PARTS`` names
    (a large module split by concern: file's reads and file's changes)."""
    module = importlib.import_module(f"runtime.modules.{mod}_mod")
    parts = [module, *(importlib.import_module(f"runtime.modules.{part}") for part in getattr(module, "PARTS", ()))]
    out: dict[str, Function] = {}
    for part in parts:
        for attr, value in vars(part).items():
            decl = declared(value)
            if decl is None or getattr(value, "__module__", None) != part.__name__:
                continue
            if attr.startswith("_") and not decl.name:
                continue   # a private alias of a public function (saltutil's _refresh_pillar)
            name = f"{mod}.{decl.name or attr}"
            out[name] = Function(name, value, decl.access, decl.absent)
    return out


@functools.cache
def registry() -> dict[str, Function]:
    """Every execution function by name ('mod.fun')."""
    out: dict[str, Function] = {}
    for mod in MODULES:
        out.update(_module_functions(mod))
    return out


def function(name: str) -> Function:
    """The function 'mod.fun', or FunctionNotFound with a clear message."""
    if not isinstance(name, str) or name.count(".") != 1:
        raise FunctionNotFound(f"'{name}' is not a function name of the form module.function")
    mod, fun = name.split(".")
    if mod not in MODULES:
        raise FunctionNotFound(f"'{name}' is not available: saltpan has no execution module '{mod}'")
    found = _module_functions(mod).get(name) if not fun.startswith("_") else None
    if found is None:
        known = ", ".join(sorted(n.split(".", 1)[1] for n in _module_functions(mod)))
        raise FunctionNotFound(f"'{name}' is not available: module '{mod}' has {known}")
    return found


def has_function(env: ModuleEnv, name: str) -> bool:
    """Whether 'mod.fun' can be called on this host (saltpan's, or a synced custom module's)."""
    return isinstance(name, str) and (name in registry() or name in custom_functions(env))


def custom_modules(env: ModuleEnv) -> custom.Loaded:
    """The custom modules synced to this host, as this job sees them (``runtime.modules.custom``)."""
    return custom.loaded(env, lambda: function_table(env))


def custom_functions(env: ModuleEnv) -> dict[str, Callable[..., Any]]:
    """The functions of the custom modules synced to this host."""
    return custom_modules(env).functions


def custom_state(env: ModuleEnv, state: str, fun: str) -> Callable[..., dict[str, Any]] | None:
    """A custom state function synced to this host, called as the executor calls state functions."""
    return custom.state_function(env, lambda: function_table(env), state, fun)


def lookup(name: str) -> Callable[..., Any]:
    return function(name).func


@functools.lru_cache(maxsize=4096)
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """A registry function's signature, read once (``inspect.signature`` rebuilds it each call)."""
    return inspect.signature(func)


def check_arguments(func: Callable[..., Any], name: str, env: Any, args: Any, kwargs: Mapping[str, Any]) -> None:
    try:
        _signature(func).bind(env, *args, **kwargs)
    except TypeError as exc:
        raise CommandError(f"Passed invalid arguments to {name}: {exc}\n\nUsage:\n{doc_of(func)}") from None


def call(env: ModuleEnv, name: str, args: list | tuple = (), kwargs: Mapping[str, Any] | None = None) -> Any:
    """Run 'mod.fun' on this host: a synced custom module's function first (it shadows saltpan's
    of the same name, as a custom module does in Salt), else the registry's."""
    kwargs = dict(kwargs or {})
    custom = custom_functions(env).get(name) if isinstance(name, str) else None
    if custom is not None:
        try:
            inspect.signature(custom).bind(*args, **kwargs)
        except TypeError as exc:
            raise CommandError(f"Passed invalid arguments to {name}: {exc}\n\nUsage:\n{doc_of(custom)}") from None
        except ValueError:
            pass   # no signature to check (a builtin): the call itself says what is wrong
        return custom(*args, **kwargs)
    func = lookup(name)
    check_arguments(func, name, env, args, kwargs)
    return func(env, *args, **kwargs)


def doc_of(func: Callable[..., Any]) -> str:
    return inspect.getdoc(func) or ""


def list_functions() -> list[str]:
    return sorted(registry())


def function_table(env: ModuleEnv) -> dict[str, Any]:
    """Every execution function but jobs, bound to env: what state modules and the executor call
    (module.run, onlyif/unless with a function) on this host."""
    table: dict[str, Any] = {}
    for name, fn in registry().items():
        if fn.access is Access.JOB:
            continue

        def bound(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            return call(env, _name, args, kwargs)

        table[name] = bound
    table.update(custom_functions(env))
    return table


# -- the `salt` table of templates ------------------------------------------------------------


@dataclass(frozen=True)
class OfflineCall:
    """A function that would have read the host (or run a command), answered offline."""

    function: str
    file: str | None
    line: int | None
    returned: Any

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        return (f"{where}salt['{self.function}'] reads the minion's host; compiled offline it returned "
                f"{self.returned!r}, what Salt returns where the thing is absent")


@dataclass
class OfflineReport:
    """The offline answers given during compiles (printed by `saltpan compile --strict`)."""

    calls: list[OfflineCall] = field(default_factory=list)

    def add(self, call: OfflineCall) -> None:
        if call not in self.calls:
            self.calls.append(call)


class TemplateFunctions:
    """The execution functions one render may call (compiler.salt_functions.FunctionMap)."""

    def __init__(self, env: ModuleEnv, offline: bool, report: OfflineReport | None = None,
                 read_host: bool = False):
        self.env = env
        self.offline = offline
        self.report = report
        # offline, but compiling for this very host (a masterless minion's own config): functions that
        # only read the host read it, as salt-call --local does; commands still never run
        self.read_host = read_host
        self._bound: dict[str, Callable[..., Any]] = {}

    def _answers_offline(self, fn: Function) -> bool:
        if not self.offline or fn.access is Access.PURE:
            return False
        return not (self.read_host and fn.access is Access.HOST)

    def _callable(self, fn: Function) -> bool:
        if fn.access is Access.JOB:
            return False
        if self._answers_offline(fn):
            return fn.absent is not None
        return True

    def _custom(self) -> dict[str, Callable[..., Any]]:
        """Synced custom modules: live renders only (an offline compile never runs tree code)."""
        return {} if self.offline else custom_functions(self.env)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        found = self._bound.get(name)
        if found is not None:
            return found
        custom = self._custom().get(name) if isinstance(name, str) else None
        if custom is not None:
            return custom
        fn = registry().get(name) if isinstance(name, str) else None
        if fn is None or not self._callable(fn):
            raise KeyError(name)
        bound = self._offline(fn) if self._answers_offline(fn) else self._live(fn)
        self._bound[name] = bound
        return bound

    def _live(self, fn: Function) -> Callable[..., Any]:
        env, func = self.env, fn.func

        def run(*args: Any, **kwargs: Any) -> Any:
            return func(env, *args, **kwargs)

        run.__name__ = fn.name
        run.__doc__ = fn.doc
        return run

    def _offline(self, fn: Function) -> Callable[..., Any]:
        from compiler.render import template_location

        env, absent, report = self.env, fn.absent, self.report
        assert absent is not None

        def answer(*args: Any, **kwargs: Any) -> Any:
            check_arguments(fn.func, fn.name, env, args, kwargs)
            value = absent(env, *args, **kwargs)
            if report is not None:
                file, line = template_location()
                report.add(OfflineCall(fn.name, file, line, value))
            return value

        answer.__name__ = fn.name
        answer.__doc__ = fn.doc
        return answer

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self._custom():
            return True
        fn = registry().get(name) if isinstance(name, str) else None
        return fn is not None and self._callable(fn)

    def __iter__(self) -> Iterator[str]:
        custom = self._custom()
        yield from custom
        yield from (name for name, fn in registry().items() if self._callable(fn) and name not in custom)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def modules(self) -> set[str]:
        return {name.split(".", 1)[0] for name in self}

    def missing_reason(self, name: str) -> str:
        fn = registry().get(name)
        if fn is None:
            mod = name.split(".", 1)[0]
            if mod in MODULES:
                known = sorted(n.split(".", 1)[1] for n in _module_functions(mod))
                return f"saltpan's module '{mod}' has no function '{name}' (it has: {', '.join(known)})"
            return f"saltpan has no execution module '{mod}'"
        if fn.access is Access.JOB:
            return f"'{name}' {Access.JOB.value} and cannot be called from a template"
        return (f"'{name}' {fn.access.value}: saltpan compile never does that on the compiling machine "
                "(it runs on the minion, in `saltpan call --local` and in state runs)")


def offline_functions(file_roots: FileSource | None = None, pillar_roots: FileSource | None = None,
                      report: OfflineReport | None = None, read_host: bool = False) -> FunctionsFactory:
    """The template table of an offline compile (``saltpan compile``, the master's pillar).

    read_host: the compile is for this very host (``saltpan compile`` with a masterless minion's own
    config): functions that read the host read it; commands still never run."""

    def make(minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
             opts: Mapping[str, Any]) -> FunctionMap:
        env = ModuleEnv(opts=opts, grains=grains, pillar=pillar,  # type: ignore[arg-type]
                        state_source=file_roots, pillar_source=pillar_roots)
        return TemplateFunctions(env, offline=True, report=report, read_host=read_host)

    return make


def live_functions(env: ModuleEnv) -> FunctionsFactory:
    """The template table of a render on this host (a minion, ``saltpan call --local``)."""

    def make(minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
             opts: Mapping[str, Any]) -> FunctionMap:
        return TemplateFunctions(replace(env, grains=grains, pillar=pillar), offline=False)  # type: ignore[arg-type]

    return make
