"""How often the master asks its minions to heartbeat: ``heartbeat_period``, stretched for big fleets.

Every session heartbeats, and each heartbeat is a sealed request a worker answers with a write to
the session table (the replay window).  At the default 5 s, 10,000 minions would send 2,000
heartbeats a second, more than two cores answer besides the jobs.  The master therefore tells a
minion, when its session opens and in every heartbeat reply, a period of at least
``sessions / heartbeat_max_rate`` seconds, so that the fleet's heartbeats stay near
``heartbeat_max_rate`` a second in all; presence
(``runtime.master.maintenance``) waits three of those periods before calling a minion gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def effective_period(base_s: float, max_rate: float, sessions: int) -> float:
    """Seconds between one minion's heartbeats for a master holding ``sessions`` sessions."""
    if max_rate <= 0:
        return base_s
    return max(base_s, sessions / max_rate)


class PeriodForFleet:
    """``effective_period`` with the session count read at most once per ``refresh_s`` (counting
    the session table at every auth of a 10,000-minion storm would cost O(n²))."""

    def __init__(self, base_s: float, max_rate: float, count: Callable[[], int], refresh_s: float = 1.0) -> None:
        self.base_s, self.max_rate, self.count, self.refresh_s = base_s, max_rate, count, refresh_s
        self._sessions = 0
        self._read_at = float("-inf")

    def __call__(self) -> float:
        if self.max_rate <= 0:
            return self.base_s
        now = time.monotonic()
        if now - self._read_at >= self.refresh_s:
            self._sessions, self._read_at = self.count(), now
        return effective_period(self.base_s, self.max_rate, self._sessions)
