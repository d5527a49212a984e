"""Find ext_pillar drivers by name and call them with what they ask for.

Drivers come from ``<extension_modules>/pillar/<name>.py`` (a custom driver,
which shadows a shipped one of the same name) and from the ``ext_pillar``
package.  A driver is called with Salt's signature ``ext_pillar(minion_id,
pillar, *args, **kwargs)``; if it also accepts keyword arguments named
``opts`` or ``grains`` they are passed too (copies: a driver cannot change the
configuration or the grains other compiles see; the ``saltenv`` and ``pillarenv``
in those opts are the compile's, as in Salt's ``__opts__``).  Modules written for Salt
that read ``__opts__``, ``__grains__`` or ``__salt__`` get those names set on
the module, for compatibility.

Every call runs under ``ext_pillar_timeout`` (see ``runtime.ext_guard``), and
so does the import of a custom driver file (its top-level code may hang
too).  A custom driver file that cannot be imported fails each call with the
import error (file:line), so that one broken file costs one ``_errors``
entry, not the compile; an edited file is imported again on its next use.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from ext_pillar import DriverError
from runtime.ext_guard import CallGuard

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DriverLoader:
    """Resolves driver names for one configuration (cached per name) and runs their calls."""

    def __init__(self, opts: Mapping[str, Any], guard: CallGuard | None = None):
        self.opts = opts
        self.guard = guard or CallGuard()
        self._cache: dict[str, tuple[Any, Callable[..., Any] | None]] = {}
        self._lock = threading.Lock()

    @property
    def timeout(self) -> float | None:
        value = self.opts.get("ext_pillar_timeout")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def custom_path(self, name: str) -> str | None:
        ext_dir = self.opts.get("extension_modules")
        if not ext_dir:
            return None
        path = os.path.join(str(ext_dir), "pillar", f"{name}.py")
        return path if os.path.isfile(path) else None

    def _load_custom(self, name: str, path: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"saltpan_ext_pillar_{name}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(__opts__=copy.deepcopy(dict(self.opts)), __grains__={}, __salt__={})
        spec.loader.exec_module(module)
        return module

    def __call__(self, name: str) -> Callable[..., Any] | None:
        if not _NAME.match(name) or name.startswith("_"):
            return None
        path = self.custom_path(name)
        stamp: Any = None
        if path:
            try:
                st = os.stat(path)
                stamp = (path, st.st_mtime_ns, st.st_size)
            except OSError:
                path = None
        with self._lock:
            cached = self._cache.get(name)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            driver = self._custom(name, path) if path else self._shipped(name)
            self._cache[name] = (stamp, driver)
            return driver

    def _shipped(self, name: str) -> Callable[..., Any] | None:
        try:
            module = importlib.import_module(f"ext_pillar.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ext_pillar.{name}":
                return None
            return _broken(f"cannot import the shipped driver: {exc}")
        func = getattr(module, "ext_pillar", None)
        if not callable(func):
            return _broken(f"ext_pillar/{name}.py defines no ext_pillar(minion_id, pillar, ...) function")
        entry = (func, _signature(func))
        return self._driver(name, lambda: entry)

    def _custom(self, name: str, path: str) -> Callable[..., Any]:
        """A driver that imports its file on first use, inside the timed call (an import may hang too)."""
        state: dict[str, Any] = {}
        lock = threading.Lock()

        def get() -> tuple[Callable[..., Any], inspect.Signature | None]:
            with lock:
                if "entry" in state:
                    return state["entry"]
                if "error" in state:
                    raise DriverError(state["error"])
            try:
                module = self._load_custom(name, path)
                func = getattr(module, "ext_pillar", None)
                if not callable(func):
                    raise DriverError(f"{path} defines no ext_pillar(minion_id, pillar, ...) function")
            except DriverError as exc:
                with lock:
                    state["error"] = exc.message
                raise
            except Exception as exc:  # noqa: BLE001 - reported on each call until the file changes
                message = f"cannot import {_import_error(exc, path)}"
                with lock:
                    state["error"] = message
                raise DriverError(message) from None
            entry = (func, _signature(func))
            with lock:
                state["entry"] = entry
            return entry

        return self._driver(name, get)

    def _driver(self, name: str, get: Callable[[], tuple[Callable[..., Any], inspect.Signature | None]]
                ) -> Callable[..., Any]:
        def run(minion_id: str, pillar: dict, args: tuple, kwargs: dict[str, Any], grains: Mapping | None,
                envs: Mapping[str, str | None] | None) -> Any:
            func, signature = get()
            params = signature.parameters if signature else {}
            if "opts" in params:
                # as Salt's __opts__ for ext_pillar: saltenv and pillarenv are the compile's
                kwargs["opts"] = copy.deepcopy({**self.opts, **(envs or {})})
            if "grains" in params:
                kwargs["grains"] = copy.deepcopy(dict(grains or {}))
            if signature is not None:
                try:
                    signature.bind(minion_id, pillar, *args, **kwargs)
                except TypeError as exc:
                    raise DriverError(f"bad arguments in the ext_pillar configuration: {exc}") from None
            return func(minion_id, pillar, *args, **kwargs)

        def call(minion_id: str, pillar: dict, *args: Any, grains: Mapping | None = None,
                 envs: Mapping[str, str | None] | None = None, **kwargs: Any) -> Any:
            return self.guard.call(name, run, self.timeout, (minion_id, pillar, args, kwargs, grains, envs), {})

        call.__name__ = f"ext_pillar_{name}"
        call.accepts_grains = True  # type: ignore[attr-defined]
        call.accepts_envs = True  # type: ignore[attr-defined]
        return call


def _signature(func: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _broken(message: str) -> Callable[..., Any]:
    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise DriverError(message)

    fail.accepts_grains = True  # type: ignore[attr-defined]
    return fail


def _import_error(exc: BaseException, path: str) -> str:
    """'path:line: Type: message' for an exception raised while importing path."""
    if isinstance(exc, SyntaxError):
        line, text = exc.lineno, exc.msg
    else:
        line, text = None, str(exc)
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == path:
                line = frame.lineno
    where = f"{path}:{line}" if line else path
    return f"{where}: {type(exc).__name__}: {text}"


def loaded_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.startswith("ext_pillar."))
