"""Replay protection: a sliding window of message counters plus timestamp freshness.

A receiver remembers, per scope (a session, a publish epoch), the highest counter it accepted
(``hi``) and a bitmap of which of the ``size`` counters at or below ``hi`` it has seen.  A counter
above ``hi`` slides the window; one inside the window is accepted once; one below it is refused
(``too_old``).  Counters start at 1.  Timestamps (milliseconds on the master's clock) must be
within ``max_skew_ms`` of now (``stale`` / ``future``).

:func:`window_admit` is the pure rule; :class:`MemoryReplayGuard` keeps windows for one process
(a minion checking publications); the master's workers share theirs through
``runtime.master.sessions.SessionStore`` which applies the same rule inside a transaction.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Protocol

from runtime.crypt.errors import ReplayRefused

WINDOW_SIZE = 1024
DEFAULT_MAX_SKEW_MS = 120_000


def now_ms() -> int:
    """The protocol's clock: milliseconds since the epoch, what every timestamp it checks holds."""
    return time.time_ns() // 1_000_000


def window_admit(hi: int, bits: int, counter: int, size: int = WINDOW_SIZE) -> tuple[int, int]:
    """Return the new ``(hi, bits)`` after accepting ``counter``, or raise :class:`ReplayRefused`.

    Bit ``i`` of ``bits`` records counter ``hi - i``.
    """
    if counter < 1:
        raise ReplayRefused(f"counter {counter} is not positive", "too_old")
    if counter > hi:
        shift = counter - hi
        bits = ((bits << shift) | 1) & ((1 << size) - 1) if shift < size else 1
        return counter, bits
    offset = hi - counter
    if offset >= size:
        raise ReplayRefused(f"counter {counter} is more than {size} behind the newest ({hi})", "too_old")
    if (bits >> offset) & 1:
        raise ReplayRefused(f"counter {counter} was already accepted", "replayed")
    return hi, bits | (1 << offset)


def check_fresh(ts_ms: int, now_ms: int, max_skew_ms: int = DEFAULT_MAX_SKEW_MS) -> None:
    """Refuse a timestamp more than ``max_skew_ms`` before or after ``now_ms``."""
    if ts_ms < now_ms - max_skew_ms:
        raise ReplayRefused(f"timestamp is {(now_ms - ts_ms) / 1000:.1f} s old (limit {max_skew_ms / 1000:g} s)",
                            "stale")
    if ts_ms > now_ms + max_skew_ms:
        raise ReplayRefused(f"timestamp is {(ts_ms - now_ms) / 1000:.1f} s in the future "
                            f"(limit {max_skew_ms / 1000:g} s)", "future")


class ReplayGuard(Protocol):
    def admit(self, scope: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        """Accept (``counter``, ``ts_ms``) in ``scope`` once, or raise :class:`ReplayRefused`."""


class MemoryReplayGuard:
    """Windows for one process, thread-safe, at most ``max_scopes`` scopes (least recent dropped).

    Dropping a scope forgets its window; use scopes whose keys die with them (a publish epoch, a
    session) so a forgotten window cannot be replayed into.
    """

    def __init__(self, *, size: int = WINDOW_SIZE, max_skew_ms: int = DEFAULT_MAX_SKEW_MS,
                 max_scopes: int = 16) -> None:
        self.size = size
        self.max_skew_ms = max_skew_ms
        self.max_scopes = max_scopes
        self._windows: OrderedDict[bytes, tuple[int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, scope: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        check_fresh(ts_ms, now_ms, self.max_skew_ms)
        with self._lock:
            hi, bits = self._windows.get(scope, (0, 0))
            self._windows[scope] = window_admit(hi, bits, counter, self.size)
            self._windows.move_to_end(scope)
            while len(self._windows) > self.max_scopes:
                self._windows.popitem(last=False)

    def forget(self, scope: bytes) -> None:
        with self._lock:
            self._windows.pop(scope, None)
