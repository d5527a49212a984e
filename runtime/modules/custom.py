"""Custom execution and state modules, written for Salt's loader (``salt://_modules``,
``salt://_states``), synced and loaded as Salt does.

``saltutil.sync_modules`` / ``sync_states`` / ``sync_all`` copy the ``.py`` files of ``_modules/``
and ``_states/`` of the file server into ``<extension_modules>/modules`` and ``.../states``
(``extension_modules`` defaults to ``<cachedir>/extmods``, Salt's default), replacing changed
files and removing the ones the file server no longer has.  Every call on this host then sees
them: ``saltpan call``, jobs, ``module.run``, templates rendered on the minion, and state runs
(custom state functions).

A custom module is ordinary Python written against Salt's loader, and gets what that loader gives
it: ``__salt__`` (every execution function of this host, custom ones included), ``__opts__``,
``__grains__``, ``__pillar__``, ``__context__`` (a dict kept for the job), ``__utils__`` (empty:
saltpan ships no Salt utils), ``__env__``; a state module also ``__states__`` and, for each call,
``__opts__["test"]``, ``__low__`` and ``__env__`` of the state being run.  ``__virtual__`` decides
whether the module loads and under which name (``False`` or ``(False, reason)``: not loaded),
``__virtualname__``, ``__func_alias__`` and ``__load__`` are honoured; public names are the
functions that do not start with ``_``.  A custom function shadows the saltpan function of the
same name; the module's other saltpan functions stay.

Nothing is sandboxed beyond what Salt does (nothing): a custom module runs with the minion's
privileges, in the minion's process.  Only the file server's administrators can ship one.
Each job gets fresh module namespaces (their dunders are that job's); the files are read and
compiled once per change.  Offline (``saltpan compile``, the master's pillar) custom modules are
never loaded: compiling must not run code from a tree on the compiling machine.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import os
import threading
import time
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from compiler.roots import FileSource

log = logging.getLogger("saltpan.modules.custom")

KINDS = ("modules", "states")
CACHE_KEY = "custom_modules"      # ModuleEnv.extra: this job's loaded custom modules


class ModuleEnv(Protocol):
    """What this module reads of ``runtime.modules.ModuleEnv`` (which imports this module)."""

    opts: dict[str, Any]
    grains: dict[str, Any]
    pillar: dict[str, Any]
    state_source: FileSource | None
    extra: dict[str, Any]


FunctionTable = Callable[[], Mapping[str, Callable[..., Any]]]


def extmods_dir(opts: Mapping[str, Any]) -> str:
    """Where synced custom modules live: ``extension_modules``, else ``<cachedir>/extmods``."""
    configured = opts.get("extension_modules")
    if configured:
        return str(configured)
    return os.path.join(str(opts.get("cachedir") or "."), "extmods")


# -- syncing from the file server ----------------------------------------------------------------


def _names(value: Any) -> set[str] | None:
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        return {v.strip() for v in value.split(",") if v.strip()}
    return {str(v) for v in value}


def sync(env: ModuleEnv, kind: str, saltenv: Any = None, whitelist: Any = None, blacklist: Any = None) -> list[str]:
    """Copy ``_<kind>/*.py`` of the file server into ``<extmods>/<kind>``; the ``<kind>.<name>``
    added or changed, sorted.  Files the file server no longer has are removed."""
    from runtime.private_files import ensure_private_dir

    source = env.state_source
    if source is None:
        return []
    if saltenv in (None, ""):
        envs = [str(env.opts["saltenv"])] if env.opts.get("saltenv") else sorted(source.saltenvs())
    else:
        envs = saltenv.split(",") if isinstance(saltenv, str) else [str(e) for e in saltenv]
    allowed, denied = _names(whitelist), _names(blacklist) or set()
    prefix = f"_{kind}/"
    wanted: dict[str, bytes] = {}
    for env_name in envs:
        if env_name not in source.saltenvs():
            continue
        for rel in source.list_files(env_name):
            name = rel[len(prefix):-3] if rel.startswith(prefix) and rel.endswith(".py") else ""
            if not name or "/" in name or name in wanted or name in denied or (allowed and name not in allowed):
                continue
            found = source.fetch(env_name, rel)
            if found is not None:
                wanted[name] = found.data
    target = os.path.join(extmods_dir(env.opts), kind)
    ensure_private_dir(target)
    changed = []
    for name, data in wanted.items():
        path = os.path.join(target, f"{name}.py")
        if _digest_of(path) != hashlib.sha256(data).hexdigest():
            tmp = f"{path}.part"
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            changed.append(f"{kind}.{name}")
    for stale in os.listdir(target):
        if stale.endswith(".py") and stale[:-3] not in wanted:
            os.remove(os.path.join(target, stale))
            log.info("removed custom %s module %s (no longer on the file server)", kind, stale[:-3])
    env.extra.pop(CACHE_KEY, None)   # this job loads the new files on its next lookup
    return sorted(changed)


def _digest_of(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


# -- loading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Compiled:
    path: str
    stamp: tuple[int, int]
    code: types.CodeType


_COMPILED: dict[str, _Compiled] = {}
_COMPILED_LOCK = threading.Lock()


def _compiled(path: str) -> types.CodeType:
    """The module's code, compiled once per change of the file (a SyntaxError names file:line)."""
    st = os.stat(path)
    stamp = (st.st_mtime_ns, st.st_size)
    with _COMPILED_LOCK:
        hit = _COMPILED.get(path)
        if hit is not None and hit.stamp == stamp:
            return hit.code
    with open(path, "rb") as fh:
        code = compile(fh.read(), path, "exec")
    with _COMPILED_LOCK:
        _COMPILED[path] = _Compiled(path, stamp, code)
    return code


class SaltFunctions(Mapping[str, Callable[..., Any]]):
    """``__salt__`` of a custom module: every execution function of the job's host, by name."""

    def __init__(self, table: FunctionTable):
        self._table = table

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._table()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._table()

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


@dataclass
class Loaded:
    """The custom modules one job sees: execution functions and state functions by 'mod.fun'."""

    functions: dict[str, Callable[..., Any]]
    states: dict[str, Callable[..., Any]]
    namespaces: dict[str, dict[str, Any]]        # "<kind>.<name>" -> the module's globals
    errors: dict[str, str]


# directory -> (its mtime, the module files listed in it): a job looks for custom modules twice
# (``has_modules``, ``loaded``), and listing the directories was 6% of a minion's CPU per test.ping
_LISTED: dict[str, tuple[int, tuple[str, ...]]] = {}
# a listing is kept only once its directory's mtime is this old: an entry added within the
# timestamp's granularity of the listing would not move the mtime it was kept under
_SETTLED_NS = 2_000_000_000


def _module_files(base: str, kind: str) -> list[str]:
    """The custom module files of ``kind`` synced under ``base`` (none when its directory is
    missing), listed again whenever the directory's mtime moves (a file added or removed)."""
    directory = os.path.join(base, kind)
    try:
        stamp = os.stat(directory).st_mtime_ns
    except OSError:
        return []
    known = _LISTED.get(directory)
    if known is not None and known[0] == stamp:
        return list(known[1])
    try:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".py") and not f.startswith("."))
    except OSError:
        return []
    if time.time_ns() - stamp > _SETTLED_NS:
        _LISTED[directory] = (stamp, tuple(files))
    return files


def has_modules(opts: Mapping[str, Any]) -> bool:
    """Whether any custom module is synced to this host (what :func:`loaded` would load)."""
    base = extmods_dir(opts)
    return any(_module_files(base, kind) for kind in KINDS)


def loaded(env: ModuleEnv, table: FunctionTable) -> Loaded:
    """This job's custom modules (loaded on first use; nothing when the extmods dir is empty);
    ``table`` gives their ``__salt__`` (runtime.modules.function_table of the job)."""
    found = env.extra.get(CACHE_KEY)
    if isinstance(found, Loaded):
        return found
    made = Loaded({}, {}, {}, {})
    env.extra[CACHE_KEY] = made   # set first: a module's __virtual__ may call __salt__
    base = extmods_dir(env.opts)
    for kind in KINDS:
        for filename in _module_files(base, kind):
            _load_one(env, table, made, kind, os.path.join(base, kind, filename))
    return made


def _load_one(env: ModuleEnv, table: FunctionTable, made: Loaded, kind: str, path: str) -> None:
    name = os.path.basename(path)[:-3]
    context: dict[str, Any] = {}
    namespace: dict[str, Any] = {
        "__name__": f"saltpan_ext.{kind}.{name}", "__file__": path, "__builtins__": __builtins__,
        "__salt__": SaltFunctions(table), "__opts__": env.opts, "__grains__": env.grains, "__pillar__": env.pillar,
        "__context__": context, "__utils__": {}, "__env__": str(env.opts.get("saltenv") or "base"),
        "__salt_system_encoding__": "utf-8"}
    if kind == "states":
        namespace["__states__"] = _StateTable(made)
    try:
        exec(_compiled(path), namespace)   # noqa: S102 - a custom module is code the file server ships, as in Salt
        virtual_name = _virtual_name(namespace, name)
    except Exception as exc:  # noqa: BLE001 - a broken custom module is reported, the others load
        made.errors[f"{kind}.{name}"] = f"{path}: {type(exc).__name__}: {exc}"
        log.error("custom %s module %s not loaded: %s: %s", kind, path, type(exc).__name__, exc)
        return
    if virtual_name is None:
        return
    made.namespaces[f"{kind}.{virtual_name}"] = namespace
    aliases = namespace.get("__func_alias__") or {}
    public = made.functions if kind == "modules" else made.states
    for attr in namespace.get("__load__") or list(namespace):
        if attr.startswith("_"):
            continue
        func = namespace.get(attr)
        if not (inspect.isfunction(func) or isinstance(func, functools.partial)):
            continue
        public[f"{virtual_name}.{aliases.get(attr, attr)}"] = func


def _virtual_name(namespace: dict[str, Any], name: str) -> str | None:
    """The name the module loads under, or None when its ``__virtual__`` declines."""
    virtualname = namespace.get("__virtualname__")
    check = namespace.get("__virtual__")
    if check is None:
        return str(virtualname) if isinstance(virtualname, str) else name
    answer = check()
    reason = ""
    if isinstance(answer, tuple):
        answer, reason = answer[0], (answer[1] if len(answer) > 1 else "")
    if answer is False or answer is None:
        log.info("custom module %s not loaded: __virtual__ returned False%s", name, f": {reason}" if reason else "")
        return None
    if isinstance(answer, str):
        return answer
    return str(virtualname) if isinstance(virtualname, str) else name


class _StateTable(Mapping[str, Callable[..., Any]]):
    """``__states__`` of a custom state module: the custom state functions by 'mod.fun'."""

    def __init__(self, made: Loaded):
        self._made = made

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._made.states[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made.states)

    def __len__(self) -> int:
        return len(self._made.states)


def state_function(env: ModuleEnv, table: FunctionTable, state: str, fun: str) -> Callable[..., dict[str, Any]] | None:
    """A custom state function as the executor calls state functions, ``(ctx, name, **kwargs)``:
    the module sees ``__opts__["test"]``, ``__low__`` and ``__env__`` of the call."""
    made = loaded(env, table)
    func = made.states.get(f"{state}.{fun}")
    if func is None:
        return None
    namespace = made.namespaces.get(f"states.{state}", {})

    def run(ctx: Any, name: str, **kwargs: Any) -> dict[str, Any]:
        namespace["__opts__"] = {**env.opts, "test": bool(ctx.test)}
        namespace["__low__"] = dict(ctx.low)
        namespace["__env__"] = ctx.saltenv
        result: dict[str, Any] = func(name, **kwargs)
        return result

    return run
