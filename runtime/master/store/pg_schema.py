"""The PostgreSQL schema of the master store, and its versions.

``saltpan master --init-store`` runs :func:`migrate`: in one transaction, holding an advisory
lock (two masters initialising at once wait for each other), it applies every migration newer
than the version recorded in ``saltpan_schema``.  Running it again changes nothing.  A master
starting on a database whose version is not :data:`LATEST` refuses to start
(:func:`require_current`): a shared database is migrated deliberately, not by whichever master
of a rolling upgrade starts first.

Tables carry the ``saltpan_`` prefix and are created in the connection's ``search_path``
(``options=-csearch_path=NAME`` in master_store_dsn puts them in a schema of their own).
Timestamps are seconds (``created``, ``updated``, ``received``: as the job cache shows them) or
milliseconds (sessions, nonces, masters: as the session code counts), each as its SQLite twin.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from runtime.master.store.errors import SchemaError
from runtime.master.store.pg import PgDatabase, scalar

if TYPE_CHECKING:
    from runtime.master.store.pg import Conn

# pg_advisory_xact_lock keys (one namespace of 64-bit numbers per database)
SCHEMA_LOCK = 0x5A17_0000
KEYS_LOCK = 0x5A17_0001

_V1 = """
CREATE TABLE saltpan_minion_keys (
    minion_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('minions', 'minions_pre', 'minions_rejected', 'minions_denied')),
    pub BYTEA NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (minion_id, status)
);
CREATE UNIQUE INDEX saltpan_minion_keys_one_state ON saltpan_minion_keys (minion_id)
    WHERE status <> 'minions_denied';
CREATE INDEX saltpan_minion_keys_status ON saltpan_minion_keys (status, minion_id);

CREATE TABLE saltpan_jobs (
    jid TEXT PRIMARY KEY,
    fun TEXT NOT NULL,
    arg TEXT NOT NULL,
    tgt TEXT NOT NULL,
    tgt_type TEXT NOT NULL,
    "user" TEXT NOT NULL,
    minions TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    master_id TEXT NOT NULL
);
CREATE INDEX saltpan_jobs_created ON saltpan_jobs (created);
CREATE TABLE saltpan_job_returns (
    jid TEXT NOT NULL,
    minion TEXT NOT NULL,
    fun TEXT NOT NULL,
    ret TEXT NOT NULL,
    success BOOLEAN NOT NULL,
    retcode INTEGER NOT NULL,
    received DOUBLE PRECISION NOT NULL,
    master_id TEXT NOT NULL,
    PRIMARY KEY (jid, minion)
);
CREATE INDEX saltpan_job_returns_received ON saltpan_job_returns (received);

CREATE TABLE saltpan_minion_data (
    minion TEXT NOT NULL,
    bank TEXT NOT NULL,
    value TEXT NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (minion, bank)
);
CREATE INDEX saltpan_minion_data_bank ON saltpan_minion_data (bank);

CREATE TABLE saltpan_nonces (
    scope TEXT NOT NULL,
    nonce BYTEA NOT NULL,
    expires BIGINT NOT NULL,
    PRIMARY KEY (scope, nonce)
);
CREATE INDEX saltpan_nonces_expires ON saltpan_nonces (expires);

CREATE TABLE saltpan_masters (
    master_id TEXT PRIMARY KEY,
    started BIGINT NOT NULL,
    seen BIGINT NOT NULL
);
CREATE TABLE saltpan_sessions (
    sid BYTEA PRIMARY KEY,
    minion_id TEXT NOT NULL,
    master_id TEXT NOT NULL,
    created BIGINT NOT NULL,
    last_seen BIGINT NOT NULL
);
CREATE INDEX saltpan_sessions_minion ON saltpan_sessions (minion_id);
CREATE INDEX saltpan_sessions_master ON saltpan_sessions (master_id);

CREATE TABLE saltpan_changes (
    seq BIGSERIAL PRIMARY KEY,
    topic TEXT NOT NULL,
    data TEXT NOT NULL,
    master_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX saltpan_changes_at ON saltpan_changes (at);

CREATE TABLE saltpan_events (
    seq BIGSERIAL PRIMARY KEY,
    master_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    data BYTEA NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX saltpan_events_at ON saltpan_events (at);

CREATE TABLE saltpan_cluster (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    cluster_id TEXT NOT NULL,
    signing_key BYTEA NOT NULL,
    previous_key BYTEA,
    created DOUBLE PRECISION NOT NULL,
    rotated DOUBLE PRECISION
)
"""

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "keys, job cache, minion data cache, nonces, masters and their sessions, changes, cluster events and key",
     _V1),
)
LATEST = MIGRATIONS[-1][0]

_VERSION_TABLE = ("CREATE TABLE IF NOT EXISTS saltpan_schema (version INTEGER PRIMARY KEY, "
                  "applied DOUBLE PRECISION NOT NULL, description TEXT NOT NULL)")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _version(conn: Conn) -> int:
    if scalar(conn, "SELECT to_regclass('saltpan_schema')") is None:
        return 0
    return int(scalar(conn, "SELECT COALESCE(MAX(version), 0) FROM saltpan_schema"))


def schema_version(db: PgDatabase) -> int:
    """The version the database is at (0: no saltpan schema)."""
    return db.run(_version, transaction=False)


def migrate(db: PgDatabase) -> tuple[int, int]:
    """Bring the schema to :data:`LATEST`; (version before, version after)."""

    def work(conn: Conn) -> tuple[int, int]:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute(_VERSION_TABLE)
        before = _version(conn)
        if before > LATEST:
            raise SchemaError(f"{db.settings.describe()} has saltpan schema version {before}, newer than this "
                              f"saltpan knows ({LATEST}): upgrade saltpan on this master")
        for version, description, script in MIGRATIONS:
            if version <= before:
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute("INSERT INTO saltpan_schema (version, applied, description) VALUES (%s, %s, %s)",
                         (version, time.time(), description))
        return before, LATEST

    return db.run(work)


def require_current(db: PgDatabase) -> None:
    """Raise :class:`SchemaError` unless the schema is at :data:`LATEST`."""
    version = schema_version(db)
    if version == LATEST:
        return
    if version == 0:
        raise SchemaError(f"{db.settings.describe()} has no saltpan schema yet: run 'saltpan master --init-store' "
                          "once (docs/operations.md)")
    if version < LATEST:
        raise SchemaError(f"{db.settings.describe()} has saltpan schema version {version}, this saltpan needs "
                          f"{LATEST}: run 'saltpan master --init-store' to migrate it (docs/operations.md)")
    raise SchemaError(f"{db.settings.describe()} has saltpan schema version {version}, newer than this saltpan "
                      f"knows ({LATEST}): upgrade saltpan on this master")
