"""The job cache in PostgreSQL: jobs and returns of every master sharing the database.

Races between masters are settled by the database: a jid is inserted once (``ON CONFLICT DO
NOTHING``: the second publisher learns it must draw another); the first return of a minion for
a jid wins and every later one is refused, whichever master received it; pruning deletes each
old job and its returns in one transaction, so two masters pruning together delete each job
once and report counts that add up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from runtime.master import jsonsafe
from runtime.master.jobcache import ReturnRow, first_of_each
from runtime.master.store.pg import PgDatabase

if TYPE_CHECKING:
    from runtime.master.store.pg import Conn

_JOB_COLUMNS = 'jid, fun, arg, tgt, tgt_type, "user", minions, created'


def _job(row: Any) -> dict[str, Any]:
    return {"jid": row[0], "fun": row[1], "arg": json.loads(row[2]), "tgt": json.loads(row[3]),
            "tgt_type": row[4], "user": row[5], "minions": json.loads(row[6]), "created": float(row[7])}


class PgJobCache:
    def __init__(self, db: PgDatabase, *, master_id: str = ""):
        self.db = db
        self.master_id = master_id

    def close(self) -> None:
        self.db.close()

    def add_job(self, jid: str, fun: str, arg: list[Any], tgt: Any, tgt_type: str, user: str,
                minions: Iterable[str]) -> bool:
        params = (jid, fun, jsonsafe.dumps(arg), jsonsafe.dumps(tgt), tgt_type, user, json.dumps(sorted(minions)),
                  time.time(), self.master_id)
        return self.db.run(lambda c: c.execute(
            f"INSERT INTO saltpan_jobs ({_JOB_COLUMNS}, master_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (jid) DO NOTHING", params).rowcount == 1)

    def add_return(self, jid: str, minion: str, fun: str, ret: Any, success: bool, retcode: int) -> bool:
        return self.add_returns([ReturnRow(jid, minion, fun, ret, success, retcode)])[0]

    def add_returns(self, rows: Sequence[ReturnRow]) -> list[bool]:
        # one statement in autocommit (PgDatabase.write_returning: its rows are stored together, with
        # one commit): sent again on a dead pooled connection, where a first send PostgreSQL committed
        # makes them "duplicate", as a minion's own resend would.  One text for any number of rows
        # (arrays), so that PostgreSQL plans it once per connection.
        firsts, marks = first_of_each(rows)
        if not firsts:
            return marks
        stored = {(jid, minion) for jid, minion in self.db.write_returning(
            "INSERT INTO saltpan_job_returns (jid, minion, fun, ret, success, retcode, received, master_id) "
            "SELECT jid, minion, fun, ret, success, retcode, %s, %s FROM unnest("
            "%s::text[], %s::text[], %s::text[], %s::text[], %s::boolean[], %s::integer[]) "
            "AS r (jid, minion, fun, ret, success, retcode) "
            "ON CONFLICT (jid, minion) DO NOTHING RETURNING jid, minion",
            (time.time(), self.master_id, [r.jid for r in firsts], [r.minion for r in firsts], [r.fun for r in firsts],
             [jsonsafe.dumps(r.ret) for r in firsts], [bool(r.success) for r in firsts],
             [int(r.retcode) for r in firsts]))}
        return [mark and (row.jid, row.minion) in stored for mark, row in zip(marks, rows, strict=True)]

    def job(self, jid: str) -> dict[str, Any] | None:
        row = self.db.run(lambda c: c.execute(f"SELECT {_JOB_COLUMNS} FROM saltpan_jobs WHERE jid = %s",
                                              (jid,)).fetchone(), transaction=False)
        return None if row is None else _job(row)

    def returns(self, jid: str) -> dict[str, Any]:
        rows = self.db.run(lambda c: c.execute(
            "SELECT minion, ret, success, retcode FROM saltpan_job_returns WHERE jid = %s ORDER BY minion COLLATE \"C\"",
            (jid,)).fetchall(), transaction=False)
        return {m: {"return": json.loads(r), "success": bool(s), "retcode": int(c)} for m, r, s, c in rows}

    def list_jobs(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self.db.run(lambda c: c.execute(
            f"SELECT {_JOB_COLUMNS} FROM saltpan_jobs ORDER BY jid COLLATE \"C\" DESC LIMIT %s", (limit,)).fetchall(),
            transaction=False)
        return [_job(r) for r in rows]

    def prune(self, keep_hours: float) -> int:
        cutoff = time.time() - keep_hours * 3600

        def work(conn: Conn) -> int:
            old = [r[0] for r in conn.execute("DELETE FROM saltpan_jobs WHERE created < %s RETURNING jid",
                                              (cutoff,)).fetchall()]
            # a return is received after its job was created: an old one belongs to a job pruned now or
            # before (one stored while its job was being pruned is not left behind either)
            conn.execute("DELETE FROM saltpan_job_returns WHERE received < %s OR jid = ANY(%s)", (cutoff, old))
            return len(old)

        return self.db.run(work)
