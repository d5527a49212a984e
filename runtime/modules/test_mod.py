"""test: ping, echo, version, sleep, arg, true, false, fib-free basics."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["ping", "echo", "version", "versions", "sleep", "arg", "true", "false", "kwarg", "retcode"]

VERSION = "0.1.0"


def ping(env: ModuleEnv) -> bool:
    """Return True: the minion is up and answering."""
    return True


def echo(env: ModuleEnv, text: Any) -> Any:
    """Return the text given."""
    return text


def version(env: ModuleEnv) -> str:
    """The saltpan version."""
    return VERSION


def versions(env: ModuleEnv) -> dict[str, Any]:
    """Versions of saltpan and its core dependencies."""
    import platform
    from importlib import metadata

    out: dict[str, Any] = {"saltpan": VERSION, "python": platform.python_version()}
    for dist in ("jinja2", "pyyaml", "pyzmq", "cryptography", "msgpack", "jsonschema"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def sleep(env: ModuleEnv, length: float | str = 1) -> bool:
    """Sleep `length` seconds, then return True."""
    time.sleep(float(length))
    return True


def arg(env: ModuleEnv, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Return the arguments and keyword arguments passed."""
    return {"args": list(args), "kwargs": {k: v for k, v in kwargs.items() if not k.startswith("__")}}


def kwarg(env: ModuleEnv, **kwargs: Any) -> dict[str, Any]:
    """Return the keyword arguments passed."""
    return {k: v for k, v in kwargs.items() if not k.startswith("__")}


def true(env: ModuleEnv) -> bool:
    """Return True."""
    return True


def false(env: ModuleEnv) -> bool:
    """Return False."""
    return False


def retcode(env: ModuleEnv, code: int = 42) -> bool:
    """Set the job's exit status to `code` and return True (checks the retcode path, as Salt's)."""
    env.retcode = int(code)
    return True
