"""The job cache in SQLite: <cachedir>/jobs.sqlite (0600).

Writes from several worker processes are safe (WAL, busy timeout); reads never block writers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from runtime.master import jsonsafe
from runtime.master.jobcache import ReturnRow, first_of_each
from runtime.master.store.sqlite_db import Migration, open_cache_db

DB_NAME = "jobs.sqlite"

MIGRATIONS: tuple[Migration, ...] = ((1, """
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
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created)
"""),)


class SQLiteJobCache:
    """``runtime.master.jobcache.JobCache`` in <cachedir>/jobs.sqlite."""

    def __init__(self, cachedir: str):
        self.path, self._db = open_cache_db(cachedir, DB_NAME, MIGRATIONS, synchronous_normal=True)

    def close(self) -> None:
        self._db.close()

    def add_job(self, jid: str, fun: str, arg: list[Any], tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> bool:
        cur = self._db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (jid) DO NOTHING",
                               (jid, fun, jsonsafe.dumps(arg), jsonsafe.dumps(tgt), tgt_type, user,
                                json.dumps(sorted(minions)), time.time()))
        return cur.rowcount == 1

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool:
        return self.add_returns([ReturnRow(jid, minion, fun, ret, success, retcode)])[0]

    def add_returns(self, rows: Sequence[ReturnRow]) -> list[bool]:
        firsts, marks = first_of_each(rows)
        if not firsts:
            return marks
        now = time.time()
        values = [(r.jid, r.minion, r.fun, jsonsafe.dumps(r.ret), int(bool(r.success)), int(r.retcode), now)
                  for r in firsts]
        sql = "INSERT INTO returns VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (jid, minion) DO NOTHING"
        if len(values) == 1:     # a statement of its own is its own transaction
            stored = [self._db.execute(sql, values[0]).rowcount == 1]
        else:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                stored = [self._db.execute(sql, v).rowcount == 1 for v in values]
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        inserted = iter(stored)
        return [mark and next(inserted) for mark in marks]

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
        self._db.execute("BEGIN IMMEDIATE")
        try:
            old = [r[0] for r in self._db.execute("DELETE FROM jobs WHERE created < ? RETURNING jid", (cutoff,))]
            # a return is received after its job was created: an old return belongs to a job pruned now or
            # before (a return stored while its job was being pruned is not left behind either)
            self._db.execute("DELETE FROM returns WHERE received < ?", (cutoff,))
            for jid in old:
                self._db.execute("DELETE FROM returns WHERE jid=?", (jid,))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return len(old)
