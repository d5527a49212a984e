"""Run ext_pillar driver calls under a time limit (``ext_pillar_timeout``).

Each call runs in its own daemon thread while the caller waits at most the
timeout.  A call that has not answered by then is *abandoned*: the caller gets
a :class:`DriverTimeout` (after a short grace, see CallGuard) and the compile goes on; the thread is left
to finish on its own and its result is thrown away (it only ever saw copies
of the compile's data, so it cannot change anything later).

Python cannot kill a thread, so a driver that never returns would hold one
forever.  Two things bound that:

* the shipped drivers bound every blocking step (sockets, commands, database
  queries) by the call's deadline (``ext_pillar._deadline``), so an abandoned
  call of theirs ends shortly after its timeout;
* a driver with ``max_abandoned`` abandoned calls still running is not
  called again until one of them ends: further calls fail at once with a
  clear error instead of piling up threads, so a hung custom driver costs a
  few threads, never the daemon.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from compiler.errors import EXT_PILLAR_ERROR, CompileError
from ext_pillar import _deadline


class DriverTimeout(CompileError):
    """A driver call did not answer within its timeout."""

    def __init__(self, timeout: float):
        super().__init__(EXT_PILLAR_ERROR, f"no answer within {timeout:g} s (ext_pillar_timeout); "
                         "the call was abandoned and its data ignored")
        self.timeout = timeout


class DriverHung(CompileError):
    """A driver still has too many abandoned calls running to be called again."""

    def __init__(self, running: int):
        super().__init__(EXT_PILLAR_ERROR, f"not called: {running} earlier call(s) of this driver timed out and "
                         "are still running; it is called again once one of them ends")


class _Call:
    __slots__ = ("result", "error", "finished", "abandoned")

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.abandoned = False


class CallGuard:
    """Time-limited driver calls for one configuration (one per DriverLoader).

    The driver's deadline is ``timeout``; the caller waits ``grace`` seconds
    longer before abandoning the call, so that a driver which stops itself at
    its deadline (a cancelled query, a killed command) reports its own, more
    precise error.
    """

    def __init__(self, max_abandoned: int = 4, grace: float = 0.25):
        self.max_abandoned = max_abandoned
        self.grace = grace
        self._lock = threading.Lock()
        self._abandoned: dict[str, int] = {}

    def abandoned(self, name: str) -> int:
        """How many timed-out calls of driver ``name`` are still running."""
        with self._lock:
            return self._abandoned.get(name, 0)

    def call(self, name: str, func: Callable[..., Any], timeout: float | None, args: tuple,
             kwargs: dict[str, Any]) -> Any:
        """func(*args, **kwargs), failing with DriverTimeout after ``timeout`` seconds (None or <= 0: no limit)."""
        if timeout is None or timeout <= 0:
            return _run_with_deadline(None, func, args, kwargs)
        with self._lock:
            running = self._abandoned.get(name, 0)
            if running >= self.max_abandoned:
                raise DriverHung(running)
        call = _Call()
        done = threading.Event()

        def work() -> None:
            try:
                call.result = _run_with_deadline(timeout, func, args, kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, or dropped when abandoned
                call.error = exc
            finally:
                with self._lock:
                    call.finished = True
                    if call.abandoned:
                        left = self._abandoned.get(name, 1) - 1
                        if left > 0:
                            self._abandoned[name] = left
                        else:
                            self._abandoned.pop(name, None)
                done.set()

        thread = threading.Thread(target=work, name=f"ext_pillar:{name}", daemon=True)
        thread.start()
        done.wait(timeout + self.grace)
        with self._lock:
            if not call.finished:
                call.abandoned = True
                self._abandoned[name] = self._abandoned.get(name, 0) + 1
                raise DriverTimeout(timeout)
        if call.error is not None:
            raise call.error
        return call.result


def _run_with_deadline(timeout: float | None, func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    token = _deadline.start(timeout)
    try:
        return func(*args, **kwargs)
    except (SystemExit, KeyboardInterrupt) as exc:
        # a driver must never stop the process that compiles everybody's pillar
        raise CompileError(EXT_PILLAR_ERROR, f"it raised {type(exc).__name__}({exc})") from None
    finally:
        _deadline.reset(token)
