"""The job cache: every published job and every return, in SQLite under cachedir.

Behind a small interface (``JobCache``) so that a PostgreSQL backend can be
added as another module.  Writes from several worker processes are safe (WAL,
busy timeout); reads never block writers.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any, Protocol

from runtime.master import jsonsafe
from runtime.master.cachedb import open_cache_db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    jid TEXT PRIMARY KEY,
    fun TEXT NOT NULL,
    arg TEXT NOT NULL,
    tgt TEXT NOT NULL,
    tgt_type TEXT NOT NULL,
    user TEXT NOT NULL,
    minions TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS returns (
    jid TEXT NOT NULL,
    minion TEXT NOT NULL,
    fun TEXT NOT NULL,
    ret TEXT NOT NULL,
    success INTEGER NOT NULL,
    retcode INTEGER NOT NULL,
    received REAL NOT NULL,
    PRIMARY KEY (jid, minion)
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
"""


class JobCache(Protocol):
    def add_job(self, jid: str, fun: str, arg: list, tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> None: ...

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool: ...

    def job(self, jid: str) -> dict[str, Any] | None: ...

    def returns(self, jid: str) -> dict[str, Any]: ...

    def list_jobs(self, limit: int = 100) -> list[dict[str, Any]]: ...

    def prune(self, keep_hours: float) -> int: ...


class SQLiteJobCache:
    """JobCache in <cachedir>/jobs.sqlite (0600)."""

    def __init__(self, cachedir: str):
        self.path, self._db = open_cache_db(cachedir, "jobs.sqlite", _SCHEMA, synchronous_normal=True)

    def close(self) -> None:
        self._db.close()

    def add_job(self, jid: str, fun: str, arg: list, tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> None:
        self._db.execute("INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (jid, fun, jsonsafe.dumps(arg), jsonsafe.dumps(tgt), tgt_type, user,
                          json.dumps(sorted(minions)), time.time()))

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool:
        """Store a return; False when this minion already returned for this jid (a replay)."""
        try:
            self._db.execute("INSERT INTO returns VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (jid, minion, fun, jsonsafe.dumps(ret), int(bool(success)), int(retcode),
                              time.time()))
        except sqlite3.IntegrityError:
            return False
        return True

    def job(self, jid: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT jid, fun, arg, tgt, tgt_type, user, minions, created FROM jobs WHERE jid=?",
                               (jid,)).fetchone()
        if row is None:
            return None
        return {"jid": row[0], "fun": row[1], "arg": json.loads(row[2]), "tgt": json.loads(row[3]),
                "tgt_type": row[4], "user": row[5], "minions": json.loads(row[6]), "created": row[7]}

    def returns(self, jid: str) -> dict[str, Any]:
        rows = self._db.execute("SELECT minion, ret, success, retcode FROM returns WHERE jid=? ORDER BY minion",
                                (jid,)).fetchall()
        return {m: {"return": json.loads(r), "success": bool(s), "retcode": c} for m, r, s, c in rows}

    def list_jobs(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT jid FROM jobs ORDER BY jid DESC LIMIT ?", (limit,)).fetchall()
        return [j for j in (self.job(r[0]) for r in rows) if j]

    def prune(self, keep_hours: float) -> int:
        cutoff = time.time() - keep_hours * 3600
        old = [r[0] for r in self._db.execute("SELECT jid FROM jobs WHERE created < ?", (cutoff,))]
        for jid in old:
            self._db.execute("DELETE FROM returns WHERE jid=?", (jid,))
            self._db.execute("DELETE FROM jobs WHERE jid=?", (jid,))
        return len(old)
