"""The SQLite file of a master cache under cachedir (the job cache, the minion data cache)."""

from __future__ import annotations

import os
import sqlite3


def open_cache_db(cachedir: str, name: str, schema: str, *, synchronous_normal: bool = False
                  ) -> tuple[str, sqlite3.Connection]:
    """(path, connection) of <cachedir>/<name>: created 0600 in a 0700 directory, WAL, busy
    timeout 10 s, autocommit, usable from any thread; ``schema`` is run on it."""
    os.makedirs(cachedir, mode=0o700, exist_ok=True)
    path = os.path.join(cachedir, name)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    if synchronous_normal:
        db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(schema)
    return path, db
