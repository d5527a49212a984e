"""What one master changed in a store that the other masters sharing it must act on.

A store shared by several masters (PostgreSQL) records a :class:`Change` in the same
transaction as the change itself, so a change is announced if and only if it happened:

* ``key`` — ``{"action": accept|reject|delete|admit, "changed": {status: [ids]}}``, from the key
  store (``saltpan key`` on any master, or an auth that stored a pending / denied / auto-accepted
  key);
* ``revoke`` — ``{"ids": [...], "reason": ...}``, from the session store: the ids lost their
  accepted key and every master must drop their sessions;
* ``publish`` — ``{"payload": {...}, "only": [ids] | null}``, from the master a job was published
  on: every other master seals it with its own publish key and sends it to the minions connected
  to it (``runtime.master.cluster``).

Events travel the same way, in a log of their own (``record_events`` / ``events_since``): each
master copies the events of its bus there and fires the other masters' events on its bus, so
``saltpan event listen`` on any master sees the whole cluster (``runtime.master.cluster``).

Changes are numbered (``seq``, increasing); a master that reads :meth:`ChangeLog.since` its last
number after a reconnect misses nothing that is still kept (``keep_s``).  :meth:`ChangeLog.wait`
blocks until a new change or event may be there (PostgreSQL ``LISTEN``), so a listener needs no polling;
a notification carries the events themselves when they fit in it, so the other masters need not read them.
A single master's store (SQLite) records nothing: there is nobody else to tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

CHANGES = "changes"     # the two logs, as ChangeLog.wait names them
EVENTS = "events"
BOTH_LOGS = frozenset((CHANGES, EVENTS))


@dataclass(frozen=True)
class Change:
    seq: int
    topic: str          # "key" or "revoke"
    data: dict[str, Any]
    master_id: str      # the master (or `saltpan key` run for it) that made the change
    at: float           # time.time() of the change


@dataclass(frozen=True)
class SharedEvent:
    seq: int
    master_id: str      # the master on whose bus it was fired
    tag: str
    data: bytes         # the bus frame as fired (msgpack)
    at: float


@dataclass(frozen=True)
class Wakeup:
    """What :meth:`ChangeLog.wait` woke up with: the logs to read, and the shared events that the
    notifications carried themselves (they need not be read)."""

    logs: frozenset[str] = frozenset()
    events: tuple[SharedEvent, ...] = ()

    @property
    def timed_out(self) -> bool:
        return not self.logs and not self.events


class ChangeLog(Protocol):
    def record(self, topic: str, data: dict[str, Any], master_id: str) -> int:
        """Record a change on its own (a ``publish``); its number."""


    def latest(self) -> int:
        """The number of the newest change (0 when there is none)."""

    def since(self, seq: int, limit: int = 1000) -> list[Change]:
        """The changes numbered above ``seq``, oldest first."""

    def wait(self, timeout: float) -> Wakeup:
        """Block until a change or a shared event may have been recorded, or ``timeout`` seconds
        passed: the logs the notifications named (``CHANGES``, ``EVENTS``), so a reader reads only
        those, and the events they carried (a batch of events small enough to fit a notification
        travels in it; a bigger one names the log); nothing at the timeout."""

    def prune(self, keep_s: float) -> int:
        """Forget changes older than ``keep_s`` seconds; how many."""

    def record_events(self, master_id: str, events: list[tuple[str, bytes]]) -> None:
        """Copy events of ``master_id``'s bus (tag, msgpack frame) for the other masters."""

    def latest_event(self) -> int:
        """The number of the newest shared event (0 when there is none)."""

    def events_since(self, seq: int, limit: int = 1000) -> list[SharedEvent]:
        """The shared events numbered above ``seq``, oldest first."""

    def prune_events(self, keep_s: float) -> int:
        """Forget shared events older than ``keep_s`` seconds; how many."""

    def close(self) -> None: ...
