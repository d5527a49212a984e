"""Find ext_pillar drivers by name and call them with what they ask for.

Drivers come from the ``ext_pillar`` package and from
``<extension_modules>/pillar/<name>.py`` (a custom driver shadows a shipped one).
A driver is called with Salt's signature ``ext_pillar(minion_id, pillar, *args,
**kwargs)``; if it also accepts keyword arguments named ``opts`` or ``grains``
they are passed too.  Modules written for Salt that read ``__opts__``,
``__grains__`` or ``__salt__`` get those names set on the module, read-only
copies, for compatibility.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DriverLoader:
    """Resolves driver names for one configuration (cached per name)."""

    def __init__(self, opts: Mapping[str, Any]):
        self.opts = opts
        self._cache: dict[str, Callable[..., Any] | None] = {}
        self._lock = threading.Lock()

    def module(self, name: str) -> ModuleType | None:
        if not _NAME.match(name) or name.startswith("_"):
            return None
        ext_dir = self.opts.get("extension_modules")
        if ext_dir:
            path = os.path.join(str(ext_dir), "pillar", f"{name}.py")
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(f"saltpan_ext_pillar_{name}", path)
                if spec and spec.loader:
                    module = importlib.util.module_from_spec(spec)
                    module.__dict__.update(__opts__=dict(self.opts), __grains__={}, __salt__={})
                    spec.loader.exec_module(module)
                    return module
        try:
            return importlib.import_module(f"ext_pillar.{name}")
        except ModuleNotFoundError as exc:
            if exc.name in (f"ext_pillar.{name}",):
                return None
            raise

    def __call__(self, name: str) -> Callable[..., Any] | None:
        with self._lock:
            if name in self._cache:
                return self._cache[name]
            module = self.module(name)
            func = getattr(module, "ext_pillar", None) if module else None
            driver = self._wrap(func) if callable(func) else None
            self._cache[name] = driver
            return driver

    def _wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        try:
            params = inspect.signature(func).parameters
        except (TypeError, ValueError):
            params = {}
        wants_opts = "opts" in params
        wants_grains = "grains" in params
        opts = self.opts

        def call(minion_id: str, pillar: dict, *args: Any, grains: Mapping | None = None, **kwargs: Any) -> Any:
            if wants_opts:
                kwargs["opts"] = opts
            if wants_grains:
                kwargs["grains"] = grains or {}
            return func(minion_id, pillar, *args, **kwargs)

        call.__name__ = getattr(func, "__name__", "ext_pillar")
        call.accepts_grains = True  # type: ignore[attr-defined]
        return call


def loaded_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.startswith("ext_pillar."))
