"""test: ping, echo, version, sleep, arg, true, false, fib-free basics."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, job, pure, runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

VERSION = "0.1.0"

# The functions here that return at once, touching nothing (no host, no master, no file, no
# import): a minion runs them on its event loop rather than handing them to a job thread (the
# hand-off was about a quarter of a minion's CPU per test.ping), unless a custom module is synced
# (it could shadow one of them with code that blocks).  runtime/minion/daemon.py: runs_on_loop.
INSTANT = frozenset({"test.ping", "test.echo", "test.version", "test.arg", "test.kwarg", "test.true", "test.false"})


@pure
def ping(env: ModuleEnv) -> bool:
    """Return True: the minion is up and answering."""
    return True


@pure
def echo(env: ModuleEnv, text: Any) -> Any:
    """Return the text given."""
    return text


@pure
def version(env: ModuleEnv) -> str:
    """The saltpan version."""
    return VERSION


@pure
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


@runs_command(absent=constant(True))
def sleep(env: ModuleEnv, length: float | str = 1) -> bool:
    """Sleep `length` seconds, then return True."""
    time.sleep(float(length))
    return True


@pure
def arg(env: ModuleEnv, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Return the arguments and keyword arguments passed."""
    return {"args": list(args), "kwargs": {k: v for k, v in kwargs.items() if not k.startswith("__")}}


@pure
def kwarg(env: ModuleEnv, **kwargs: Any) -> dict[str, Any]:
    """Return the keyword arguments passed."""
    return {k: v for k, v in kwargs.items() if not k.startswith("__")}


@pure
def true(env: ModuleEnv) -> bool:
    """Return True."""
    return True


@pure
def false(env: ModuleEnv) -> bool:
    """Return False."""
    return False


@job
def retcode(env: ModuleEnv, code: int = 42) -> bool:
    """Set the job's exit status to `code` and return True (checks the retcode path, as Salt's)."""
    env.retcode = int(code)
    return True
