"""The job cache: every published job and every return, for ``saltpan jobs`` and the handlers.

:class:`JobCache` is the interface; the backends (SQLite under cachedir, PostgreSQL shared by
masters) are in ``runtime.master.store`` and only its factory names them.  Every backend keeps
these rules, which the contract tests (tests/stores/) hold:

* :meth:`JobCache.add_job` stores a job only when its jid is new (False otherwise): two
  publishers that drew the same jid cannot overwrite each other's job;
* :meth:`JobCache.add_return` stores the first return of a minion for a jid and refuses every
  other (False): a replayed or duplicated return never replaces the first, whichever master or
  worker receives them;
* :meth:`JobCache.prune` deletes each old job (and its returns) exactly once when several
  processes or masters prune together; the counts they report add up to the jobs deleted.

Values (``arg``, ``tgt``, ``ret``) are stored as JSON (``runtime.master.jsonsafe``: bytes and
other non-JSON values become text), and read back as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class JobCache(Protocol):
    def add_job(self, jid: str, fun: str, arg: list[Any], tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> bool:
        """Store a new job; False (nothing changed) when ``jid`` is already taken."""

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool:
        """Store a return; False when this minion already returned for this jid (a replay)."""

    def job(self, jid: str) -> dict[str, Any] | None:
        """``{"jid", "fun", "arg", "tgt", "tgt_type", "user", "minions", "created"}`` or None."""

    def returns(self, jid: str) -> dict[str, Any]:
        """``{minion: {"return", "success", "retcode"}}``, sorted by minion id."""

    def list_jobs(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` jobs (by jid, newest first), as :meth:`job` gives them."""

    def prune(self, keep_hours: float) -> int:
        """Delete jobs created more than ``keep_hours`` ago with their returns; how many."""

    def close(self) -> None: ...
