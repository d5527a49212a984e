"""What one master changed in a store that the other masters sharing it must act on.

A store shared by several masters (PostgreSQL) records a :class:`Change` in the same
transaction as the change itself, so a change is announced if and only if it happened:

* ``key`` — ``{"action": accept|reject|delete|admit, "changed": {status: [ids]}}``, from the key
  store (``saltpan key`` on any master, or an auth that stored a pending / denied / auto-accepted
  key);
* ``revoke`` — ``{"ids": [...], "reason": ...}``, from the session store: the ids lost their
  accepted key and every master must drop their sessions.

Changes are numbered (``seq``, increasing); a master that reads :meth:`ChangeLog.since` its last
number after a reconnect misses nothing that is still kept (``keep_s``).  :meth:`ChangeLog.wait`
blocks until a new change may be there (PostgreSQL ``LISTEN``), so a listener needs no polling.
A single master's store (SQLite) records nothing: there is nobody else to tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Change:
    seq: int
    topic: str          # "key" or "revoke"
    data: dict[str, Any]
    master_id: str      # the master (or `saltpan key` run for it) that made the change
    at: float           # time.time() of the change


class ChangeLog(Protocol):
    def latest(self) -> int:
        """The number of the newest change (0 when there is none)."""

    def since(self, seq: int, limit: int = 1000) -> list[Change]:
        """The changes numbered above ``seq``, oldest first."""

    def wait(self, timeout: float) -> bool:
        """Block until a change may have been recorded (True) or ``timeout`` seconds passed."""

    def prune(self, keep_s: float) -> int:
        """Forget changes older than ``keep_s`` seconds; how many."""

    def close(self) -> None: ...
