"""The SQLite files of a master's stores: created 0600 in a 0700 directory, WAL, a schema
version (``PRAGMA user_version``) migrated forward on open."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence

from runtime.master.store.errors import SchemaError

Migration = tuple[int, str]
"""(schema version it brings the file to, SQL script)."""


def migrate(db: sqlite3.Connection, migrations: Sequence[Migration], path: str) -> int:
    """Apply the migrations newer than the file's ``user_version``, each in one transaction;
    return the version.  A file newer than this saltpan knows is an error."""
    latest = migrations[-1][0]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > latest:
        raise SchemaError(f"{path} has schema version {version}, newer than this saltpan knows ({latest}): "
                          "upgrade saltpan, or move the file away")
    for target, script in migrations:
        if target <= version:
            continue
        # executescript commits first; BEGIN IMMEDIATE makes the check-and-migrate one writer's work
        db.execute("BEGIN IMMEDIATE")
        try:
            current = db.execute("PRAGMA user_version").fetchone()[0]
            if current < target:
                for statement in _statements(script):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {int(target)}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        version = target
    return version


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def open_cache_db(cachedir: str, name: str, migrations: Sequence[Migration], *, synchronous_normal: bool = False
                  ) -> tuple[str, sqlite3.Connection]:
    """(path, connection) of <cachedir>/<name>: created 0600 in a 0700 directory, WAL, busy
    timeout 10 s, autocommit, usable from any thread; migrated to the latest schema."""
    os.makedirs(cachedir, mode=0o700, exist_ok=True)
    path = os.path.join(cachedir, name)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    if synchronous_normal:
        db.execute("PRAGMA synchronous=NORMAL")
    migrate(db, migrations, path)
    return path, db
