"""Returns a master keeps while its job cache is out of reach (``master_store: postgres`` and the
database down), so that none is lost.

A return arriving then is checked as far as it can be without the database (it came through
the minion's session, so its sender is known), kept in :class:`ReturnSpool` (a SQLite file in
the master's cachedir) and answered Ok: the minion has delivered it.  The maintenance process
hands the kept returns to the job cache once the database answers again, through the same
checks as a return received then (``runtime.master.handlers.jobs.record_return``: the job must
exist and be sent to that minion, the first return wins) and fires their
``salt/job/<jid>/ret/<id>`` events late.  A client still waiting sees them; ``saltpan jobs
lookup`` shows them in any case.

The spool holds at most ``MAX_SPOOLED`` returns (one per minion and jid); beyond that a return
is refused ``store_unavailable``, which the minion logs.
"""

from __future__ import annotations

from typing import Protocol

from runtime import protocol

MAX_SPOOLED = 100_000


class ReturnSpool(Protocol):
    def keep(self, minion_id: str, ret: protocol.JobReturn) -> bool:
        """Keep the return until the job cache takes it; False when the spool cannot (full, or
        this master's store needs none)."""

    def take(self, limit: int) -> list[tuple[int, str, protocol.JobReturn]]:
        """Up to ``limit`` kept returns, oldest first: (entry id, minion id, return)."""

    def done(self, entries: list[int]) -> None:
        """Forget entries handed over (or refused for good)."""

    def count(self) -> int: ...

    def close(self) -> None: ...
