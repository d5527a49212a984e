"""How long the current driver call may still take.

The runtime sets a deadline around each driver call (``ext_pillar_timeout``);
drivers that do I/O bound every blocking step by :func:`bounded` so that a
call abandoned after its timeout ends by itself soon after, instead of
holding a thread.  The deadline lives in a context variable: each worker
thread has its own, nothing is shared between calls.
"""

from __future__ import annotations

import contextvars
import time

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("ext_pillar_deadline", default=None)
_BUDGET: contextvars.ContextVar[float | None] = contextvars.ContextVar("ext_pillar_budget", default=None)

# never hand out a zero or negative timeout: a blocking call would then block forever or fail oddly
_FLOOR = 0.05


def start(seconds: float | None) -> contextvars.Token:
    """Set the deadline of the current call to ``seconds`` from now (None: no deadline)."""
    _BUDGET.set(None if seconds is None else float(seconds))
    return _DEADLINE.set(None if seconds is None else time.monotonic() + float(seconds))


def reset(token: contextvars.Token) -> None:
    _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline, None when the call has none."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    return max(_FLOOR, deadline - time.monotonic())


def expired() -> bool:
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() >= deadline


def bounded(timeout: float | None, default: float | None = None) -> float | None:
    """The smaller of ``timeout`` (or ``default`` when it is None) and the time left."""
    if timeout is None:
        timeout = default
    left = remaining()
    if left is None:
        return timeout
    return left if timeout is None else min(float(timeout), left)


def nominal(timeout: float | None, default: float | None = None) -> float | None:
    """The limit to name in messages: the smaller of ``timeout`` and the call's whole budget
    (not the time left, which varies from run to run)."""
    if timeout is None:
        timeout = default
    budget = _BUDGET.get()
    if budget is None:
        return timeout
    return budget if timeout is None else min(float(timeout), budget)
