"""The job cache: every published job and every return, for ``saltpan jobs`` and the handlers.

:class:`JobCache` is the interface; the backends (SQLite under cachedir, PostgreSQL shared by
masters) are in ``runtime.master.store`` and only its factory names them.  Every backend keeps
these rules, which the contract tests (tests/stores/) hold:

* :meth:`JobCache.add_job` stores a job only when its jid is new (False otherwise): two
  publishers that drew the same jid cannot overwrite each other's job;
* :meth:`JobCache.add_returns` stores the first return of a minion for a jid and refuses every
  other (False): a replayed or duplicated return never replaces the first, whichever master or
  worker receives them.  The returns of one call are stored together or not at all (one
  transaction: a worker handed several returns at once writes them with one commit);
* :meth:`JobCache.prune` deletes each old job (and its returns) exactly once when several
  processes or masters prune together; the counts they report add up to the jobs deleted.

Values (``arg``, ``tgt``, ``ret``) are stored as JSON (``runtime.master.jsonsafe``: bytes and
other non-JSON values become text), and read back as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ReturnRow:
    """One minion's return for a job, as the job cache stores it."""

    jid: str
    minion: str
    fun: str
    ret: Any
    success: bool
    retcode: int


def first_of_each(rows: Sequence[ReturnRow]) -> tuple[list[ReturnRow], list[bool]]:
    """The rows to insert (a minion's first for a jid in ``rows``), and for each of ``rows``
    whether it is one of them: a second return of a minion in one batch is refused as a replay."""
    seen: set[tuple[str, str]] = set()
    firsts: list[ReturnRow] = []
    marks: list[bool] = []
    for row in rows:
        key = (row.jid, row.minion)
        marks.append(key not in seen)
        if key not in seen:
            seen.add(key)
            firsts.append(row)
    return firsts, marks


class JobCache(Protocol):
    def add_job(self, jid: str, fun: str, arg: list[Any], tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> bool:
        """Store a new job; False (nothing changed) when ``jid`` is already taken."""

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool:
        """Store a return; False when this minion already returned for this jid (a replay)."""

    def add_returns(self, rows: Sequence[ReturnRow]) -> list[bool]:
        """Store several returns in one transaction; for each, whether it was stored (False: a
        replay, of a return stored before or of one earlier in ``rows``)."""

    def job(self, jid: str) -> dict[str, Any] | None:
        """``{"jid", "fun", "arg", "tgt", "tgt_type", "user", "minions", "created"}`` or None."""

    def returns(self, jid: str) -> dict[str, Any]:
        """``{minion: {"return", "success", "retcode"}}``, sorted by minion id."""

    def list_jobs(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` jobs (by jid, newest first), as :meth:`job` gives them."""

    def prune(self, keep_hours: float) -> int:
        """Delete jobs created more than ``keep_hours`` ago with their returns; how many."""

    def close(self) -> None: ...
