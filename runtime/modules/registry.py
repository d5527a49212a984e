"""How an execution function declares what it needs.

Every public function of an execution module (``runtime/modules/<mod>_mod.py``)
carries one of these decorators; the decorated functions ARE the module's
public functions (there is no second list).  The access class decides where
the function may run:

``@pure``
    reads only the data it is given (opts, grains, pillar, the file and pillar
    roots, the clock) or computes: runs everywhere, offline compiles included.
``@reads_host(absent=...)``
    reads this host (files, users, packages, programs on PATH).  On a minion and
    in ``saltpan call --local`` it runs; offline (``saltpan compile``, the
    master's pillar) it never touches the compiling machine: ``absent`` gives
    what Salt returns on a host where the thing is absent (``file.file_exists``
    -> False, ``user.info`` -> {}), and ``compile --strict`` reports the call.
``@runs_command(absent=...)``
    runs a command or changes the host.  Offline it never runs: ``absent``
    (when given) is what Salt returns where the command is absent, else the
    function is not available offline (undefined in templates).
``@job``
    drives this minion's jobs (state runs, pillar refreshes): callable from the
    command line and jobs, never from templates.

``name=`` gives the Salt name when the Python name cannot be it (``status.time``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class Access(enum.Enum):
    PURE = "pure"
    HOST = "reads the host"
    COMMAND = "runs a command or changes the host"
    JOB = "drives this minion's jobs"


@dataclass(frozen=True)
class Declared:
    """What a decorator records on a function."""

    access: Access
    absent: Callable[..., Any] | None = None
    name: str | None = None


MARK = "saltpan_declared"


def _mark(func: F, declared: Declared) -> F:
    setattr(func, MARK, declared)
    return func


def pure(func: F | None = None, *, name: str | None = None) -> Any:
    if func is None:
        return lambda f: _mark(f, Declared(Access.PURE, None, name))
    return _mark(func, Declared(Access.PURE))


def reads_host(absent: Callable[..., Any], name: str | None = None) -> Callable[[F], F]:
    return lambda func: _mark(func, Declared(Access.HOST, absent, name))


def runs_command(absent: Callable[..., Any] | None = None, name: str | None = None) -> Callable[[F], F]:
    return lambda func: _mark(func, Declared(Access.COMMAND, absent, name))


def job(func: F | None = None, *, name: str | None = None) -> Any:
    if func is None:
        return lambda f: _mark(f, Declared(Access.JOB, None, name))
    return _mark(func, Declared(Access.JOB))


def declared(func: Any) -> Declared | None:
    found = getattr(func, MARK, None)
    return found if isinstance(found, Declared) else None


def constant(value: Any) -> Callable[..., Any]:
    """An ``absent`` answer that does not depend on the arguments (a fresh copy of value each call)."""
    import copy

    def answer(*_args: Any, **_kwargs: Any) -> Any:
        return copy.deepcopy(value)

    answer.__doc__ = f"returns {value!r}"
    return answer
