"""``runtime.master.spool.ReturnSpool`` in <cachedir>/returns_spool.sqlite (0600), created when
the first return has to wait."""

from __future__ import annotations

import os
import sqlite3
import time

from runtime import codec, protocol
from runtime.master.spool import MAX_SPOOLED
from runtime.master.store.sqlite_db import Migration, open_cache_db

DB_NAME = "returns_spool.sqlite"

MIGRATIONS: tuple[Migration, ...] = ((1, """
CREATE TABLE IF NOT EXISTS spool (
    entry INTEGER PRIMARY KEY AUTOINCREMENT,
    minion TEXT NOT NULL,
    jid TEXT NOT NULL,
    load BLOB NOT NULL,
    received REAL NOT NULL,
    UNIQUE (jid, minion)
)
"""),)


class SQLiteReturnSpool:
    def __init__(self, cachedir: str, *, max_entries: int = MAX_SPOOLED):
        self.cachedir = cachedir
        self.max_entries = max_entries
        self._db: sqlite3.Connection | None = None

    def _open(self, create: bool) -> sqlite3.Connection | None:
        if self._db is None and (create or os.path.exists(os.path.join(self.cachedir, DB_NAME))):
            _, self._db = open_cache_db(self.cachedir, DB_NAME, MIGRATIONS)
        return self._db

    def keep(self, minion_id: str, ret: protocol.JobReturn) -> bool:
        db = self._open(create=True)
        assert db is not None
        if self.count() >= self.max_entries:
            return False
        db.execute("INSERT INTO spool (minion, jid, load, received) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (jid, minion) DO NOTHING",
                   (minion_id, ret.jid, codec.pack(ret.to_wire()), time.time()))
        return True

    def take(self, limit: int) -> list[tuple[int, str, protocol.JobReturn]]:
        db = self._open(create=False)
        if db is None:
            return []
        rows = db.execute("SELECT entry, minion, load FROM spool ORDER BY entry LIMIT ?", (limit,)).fetchall()
        return [(entry, minion, protocol.JobReturn.from_wire(codec.unpack(load))) for entry, minion, load in rows]

    def done(self, entries: list[int]) -> None:
        db = self._open(create=False)
        if db is not None and entries:
            db.executemany("DELETE FROM spool WHERE entry = ?", [(e,) for e in entries])

    def count(self) -> int:
        db = self._open(create=False)
        return 0 if db is None else int(db.execute("SELECT COUNT(*) FROM spool").fetchone()[0])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
