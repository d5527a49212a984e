"""The one place that builds the master's stores from config (``master_store``).

=================  ==========================================  ==========================================
store              ``master_store: sqlite`` (default)           ``master_store: postgres``
=================  ==========================================  ==========================================
keys               files under pki_dir (Salt's layout)          ``saltpan_minion_keys``, shared
job cache          <cachedir>/jobs.sqlite                       ``saltpan_jobs``, ``saltpan_job_returns``
minion data        <cachedir>/minion_data.sqlite                ``saltpan_minion_data``
sessions           <sock_dir>/sessions.sqlite                   the same file (the master's own), plus
                                                                nonces and the session registry shared
changes            none (one master)                            ``saltpan_changes`` + NOTIFY
return spool       none                                         <cachedir>/returns_spool.sqlite (returns
                                                                waiting while the database is away)
=================  ==========================================  ==========================================

Every other module asks for an interface (``KeyStore``, ``JobCache``, ``DataCache``,
``SessionStore``, ``ChangeLog``) and gets it here; none names a backend class
(tests/stores/test_factory.py holds that).  PostgreSQL backends are imported only when
configured, and with them psycopg.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.config import ConfigError, option, optional_option
from runtime.master.changes import Change, ChangeLog, SharedEvent, Wakeup
from runtime.master.datacache import DataCache
from runtime.master.jobcache import JobCache
from runtime.master.keys import KeyStore
from runtime.master.sessions import SessionStore
from runtime.master.spool import ReturnSpool
from runtime.master.store.errors import StoreError

if TYPE_CHECKING:
    from runtime.crypt.identity import Identity
    from runtime.master.store.pg import PgDatabase, PgSettings
    from runtime.protocol import JobReturn

BACKENDS = ("sqlite", "postgres")


def _where(opts: dict[str, Any]) -> str:
    return str(opts["conf_file"]) if opts.get("conf_file") else "config"


def backend(opts: dict[str, Any]) -> str:
    """``master_store``: sqlite or postgres (a clear error for anything else)."""
    kind = option(opts, "master_store", str).strip().lower()
    if kind not in BACKENDS:
        raise ConfigError(f"{_where(opts)}: master_store must be sqlite or postgres, "
                          f"got {kind!r}")
    return kind


def master_id(opts: dict[str, Any]) -> str:
    """This master's id among masters sharing a store: ``id`` from its config, else Salt's
    default for a master, ``<fqdn>_master``."""
    configured = optional_option(opts, "id", str)
    return configured if configured else f"{socket.getfqdn()}_master"


# ------------------------------------------------------------------ PostgreSQL plumbing
def _pg_settings(opts: dict[str, Any]) -> PgSettings:
    from runtime.master.store.pg import PgSettings

    dsn = optional_option(opts, "master_store_dsn", str)
    if not dsn:
        raise ConfigError(f"{_where(opts)}: master_store: postgres needs master_store_dsn "
                          "(e.g. 'postgresql://saltpan@db.example.com/saltpan'): see docs/operations.md")
    pool = option(opts, "master_store_pool_size", int)
    if pool < 1:
        raise ConfigError(f"{_where(opts)}: master_store_pool_size must be at least 1, "
                          f"got {pool}")
    return PgSettings(dsn=dsn, pool_size=pool,
                      connect_timeout=option(opts, "master_store_connect_timeout", float),
                      statement_timeout=option(opts, "master_store_statement_timeout", float))


def _pg_database(opts: dict[str, Any]) -> PgDatabase:
    from runtime.master.store.pg import PgDatabase

    return PgDatabase(_pg_settings(opts))


def describe(opts: dict[str, Any]) -> str:
    """Where the shared stores live, for log lines and errors (no password)."""
    if backend(opts) == "sqlite":
        return f"SQLite under {opts['cachedir']}, keys under {opts['pki_dir']}"
    return _pg_settings(opts).describe()


# ------------------------------------------------------------------ one store at a time
def open_key_store(opts: dict[str, Any], *, db: PgDatabase | None = None) -> KeyStore:
    max_pending = option(opts, "max_pending_keys", int)
    if backend(opts) == "sqlite":
        from runtime.master.store.file_keys import FileKeyStore

        return FileKeyStore(opts["pki_dir"], max_pending=max_pending)
    from runtime.master.store.pg_keys import PgKeyStore

    return PgKeyStore(db or _pg_database(opts), max_pending=max_pending, master_id=master_id(opts))


def open_job_cache(opts: dict[str, Any], *, db: PgDatabase | None = None) -> JobCache:
    if backend(opts) == "sqlite":
        from runtime.master.store.sqlite_jobs import SQLiteJobCache

        return SQLiteJobCache(opts["cachedir"])
    from runtime.master.store.pg_jobs import PgJobCache

    return PgJobCache(db or _pg_database(opts), master_id=master_id(opts))


def open_data_cache(opts: dict[str, Any], *, still_known: Callable[[str], bool] | None = None,
                    max_size: int | None = None, db: PgDatabase | None = None) -> DataCache:
    if backend(opts) == "sqlite":
        from runtime.master.store.sqlite_data import SQLiteDataCache

        return SQLiteDataCache(opts["cachedir"], still_known=still_known, max_size=max_size)
    from runtime.master.store.pg_data import PgDataCache

    return PgDataCache(db or _pg_database(opts), still_known=still_known, max_size=max_size)


def open_session_store(opts: dict[str, Any], *, db: PgDatabase | None = None) -> SessionStore:
    from runtime.master.store.sqlite_sessions import SQLiteSessionStore

    local = SQLiteSessionStore.in_sock_dir(opts["sock_dir"], master_id=master_id(opts))
    if backend(opts) == "sqlite":
        return local
    from runtime.master.store.pg_sessions import PgSessionStore

    return PgSessionStore(local, db or _pg_database(opts), master_id=master_id(opts))


def open_change_log(opts: dict[str, Any], *, db: PgDatabase | None = None) -> ChangeLog:
    if backend(opts) == "sqlite":
        return NoChanges()
    from runtime.master.store.pg_changes import PgChangeLog

    return PgChangeLog(db or _pg_database(opts))


def open_return_spool(opts: dict[str, Any]) -> ReturnSpool:
    """Where returns wait while the job cache is out of reach: a SQLite file in cachedir on
    PostgreSQL; none on SQLite (its job cache is as near as the spool would be)."""
    if backend(opts) == "sqlite":
        return NoSpool()
    from runtime.master.store.sqlite_spool import SQLiteReturnSpool

    return SQLiteReturnSpool(opts["cachedir"])


class NoSpool:
    """A single master's store: a return is stored or refused at once."""

    def keep(self, minion_id: str, ret: JobReturn) -> bool:
        return False

    def take(self, limit: int) -> list[tuple[int, str, JobReturn]]:
        return []

    def done(self, entries: list[int]) -> None:
        pass

    def count(self) -> int:
        return 0

    def close(self) -> None:
        pass


class NoChanges:
    """A single master's store: nobody else to tell, nothing to hear."""

    def record(self, topic: str, data: dict[str, Any], master_id: str) -> int:
        return 0

    def latest(self) -> int:
        return 0

    def since(self, seq: int, limit: int = 1000) -> list[Change]:
        return []

    def record_events(self, master_id: str, events: list[tuple[str, bytes]]) -> None:
        pass

    def latest_event(self) -> int:
        return 0

    def events_since(self, seq: int, limit: int = 1000) -> list[SharedEvent]:
        return []

    def prune_events(self, keep_s: float) -> int:
        return 0

    def wait(self, timeout: float) -> Wakeup:
        import time

        time.sleep(max(0.0, timeout))
        return Wakeup()

    def prune(self, keep_s: float) -> int:
        return 0

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ what a process uses together
@dataclass
class MasterStores:
    """The stores of one master process, sharing one database connection pool."""

    keys: KeyStore
    sessions: SessionStore
    jobs: JobCache
    data: DataCache
    changes: ChangeLog = field(default_factory=NoChanges)
    spool: ReturnSpool = field(default_factory=NoSpool)

    def close(self) -> None:
        for closer in (self.jobs.close, self.data.close, self.sessions.close, self.keys.close, self.changes.close,
                       self.spool.close):
            try:
                closer()
            except Exception:  # noqa: BLE001 - closing what is left after a failure
                pass


def open_master_stores(opts: dict[str, Any]) -> MasterStores:
    """A worker's stores: the data cache keeps only what it stores for minions that still have a
    session here (``runtime.master.revocation``), each entry within ``max_minion_data_size``."""
    db = _pg_database(opts) if backend(opts) == "postgres" else None
    sessions = open_session_store(opts, db=db)
    return MasterStores(
        keys=open_key_store(opts, db=db), sessions=sessions, jobs=open_job_cache(opts, db=db),
        data=open_data_cache(opts, still_known=lambda m: bool(sessions.minion_sessions(m)),
                             max_size=option(opts, "max_minion_data_size", int), db=db),
        changes=open_change_log(opts, db=db), spool=open_return_spool(opts))


# ------------------------------------------------------------------ stores that may not exist yet
def existing_session_store(opts: dict[str, Any]) -> SessionStore | None:
    """The session store if this master ever ran (its sessions file exists), else None: a
    command that only forgets must not create stores."""
    from runtime.master.store.sqlite_sessions import DB_NAME

    if not os.path.exists(os.path.join(opts["sock_dir"], DB_NAME)):
        return None
    return open_session_store(opts)


def existing_data_cache(opts: dict[str, Any]) -> DataCache | None:
    """The minion data cache if there is one (on SQLite: its file exists), else None."""
    if backend(opts) == "sqlite":
        from runtime.master.store.sqlite_data import DB_NAME

        if not os.path.isfile(os.path.join(opts["cachedir"], DB_NAME)):
            return None
    return open_data_cache(opts)


# ------------------------------------------------------------------ the cluster
def cluster_id(opts: dict[str, Any]) -> str | None:
    """``cluster_id`` (None when unset); only meaningful with ``master_store: postgres``."""
    value = optional_option(opts, "cluster_id", str)
    if value is None or not str(value).strip():
        return None
    if backend(opts) != "postgres":
        raise ConfigError(f"{_where(opts)}: cluster_id needs master_store: postgres (the masters of a cluster "
                          "share one database): see docs/operations.md")
    return str(value).strip()


def is_shared(opts: dict[str, Any]) -> bool:
    """Whether other masters may share this master's store (they do on PostgreSQL)."""
    return backend(opts) == "postgres"


def cluster_identity(opts: dict[str, Any], own: Identity) -> Identity:
    """The key this master signs with: ``own`` (pki_dir/master.pem), or with ``cluster_id`` the
    cluster's key from the database (``own`` becomes it when this master is the first).  The
    cluster key's public half is written to pki_dir/cluster.pub for operators."""
    name = cluster_id(opts)
    if name is None:
        return own
    from runtime.crypt.identity import key_paths
    from runtime.master.store import pg_cluster
    from runtime.private_files import ensure_private_dir, write_private

    db = _pg_database(opts)
    try:
        identity, _created = pg_cluster.join(db, name, own)
    finally:
        db.close()
    ensure_private_dir(opts["pki_dir"])
    write_private(key_paths(opts["pki_dir"], "cluster")[1], identity.public_pem())
    return identity


def rotate_cluster_key(opts: dict[str, Any]) -> list[str]:
    """``saltpan master --rotate-cluster-key``: a new cluster key; the lines to report."""
    name = cluster_id(opts)
    if name is None:
        raise ConfigError(f"{_where(opts)}: --rotate-cluster-key needs cluster_id (and master_store: postgres)")
    from runtime.master.store import pg_cluster

    db = _pg_database(opts)
    try:
        old, new = pg_cluster.rotate(db, name)
    finally:
        db.close()
    return [f"cluster {name}: signing key {old.fingerprint} replaced by {new.fingerprint}",
            "restart each master to sign with it; minions trust it once their minion_master.pub is replaced "
            "(docs/operations.md, \"Rotating the cluster key\")"]


def cluster_masters(opts: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The masters registered in the shared store: (id, started ms, last maintenance pass ms);
    on SQLite only this master."""
    if backend(opts) == "sqlite":
        return []
    from runtime.master.store import pg_cluster

    db = _pg_database(opts)
    try:
        return pg_cluster.masters(db)
    finally:
        db.close()


# ------------------------------------------------------------------ schema
def check_store(opts: dict[str, Any]) -> None:
    """At master start, before the children are forked: the configured store is reachable and
    its schema current (else ``StoreUnavailable`` / ``SchemaError`` with what to do).  SQLite
    files are created and migrated here, once, rather than by every worker opening them at the
    same moment (switching a new file to WAL is not something several processes may race on)."""
    if backend(opts) == "sqlite":
        _init_sqlite(opts)
        return
    from runtime.master.store import pg_schema

    db = _pg_database(opts)
    try:
        pg_schema.require_current(db)
    finally:
        db.close()


def init_store(opts: dict[str, Any]) -> list[str]:
    """``saltpan master --init-store``: create or migrate the configured store (idempotent);
    the lines to report.  On PostgreSQL, keys found in pki_dir are imported (those whose id has
    no key in the database yet), so a master moving from files keeps its accepted minions."""
    if backend(opts) == "sqlite":
        return _init_sqlite(opts)
    return _init_postgres(opts)


def _init_sqlite(opts: dict[str, Any]) -> list[str]:
    import sqlite3

    try:
        return _init_sqlite_files(opts)
    except sqlite3.Error as exc:
        raise StoreError(f"the master's SQLite stores (under {opts['cachedir']} and {opts['sock_dir']}) cannot be "
                         f"opened: {exc}; move a damaged file away (the master starts a new one)") from None


def _init_sqlite_files(opts: dict[str, Any]) -> list[str]:
    from runtime.master.store import sqlite_data, sqlite_jobs, sqlite_sessions
    from runtime.master.store.file_keys import FileKeyStore

    keys = FileKeyStore(opts["pki_dir"], max_pending=option(opts, "max_pending_keys", int))
    keys.close()
    lines = [f"key store: {opts['pki_dir']} (files, Salt's layout)"]
    jobs = sqlite_jobs.SQLiteJobCache(opts["cachedir"])
    jobs.close()
    data = sqlite_data.SQLiteDataCache(opts["cachedir"])
    data.close()
    sessions = sqlite_sessions.SQLiteSessionStore.in_sock_dir(opts["sock_dir"])
    sessions.close()
    for what, path, version in (("job cache", jobs.path, sqlite_jobs.MIGRATIONS[-1][0]),
                                ("minion data cache", data.path, sqlite_data.MIGRATIONS[-1][0]),
                                ("sessions", sessions.path, sqlite_sessions.MIGRATIONS[-1][0])):
        lines.append(f"{what}: {path} (SQLite, schema version {version})")
    return lines


def _init_postgres(opts: dict[str, Any]) -> list[str]:
    from runtime.master.store import pg_schema
    from runtime.master.store.file_keys import FileKeyStore
    from runtime.master.store.pg_keys import PgKeyStore

    db = _pg_database(opts)
    try:
        before, after = pg_schema.migrate(db)
        where = db.settings.describe()
        if before == after:
            lines = [f"{where}: schema version {after}, up to date"]
        elif before == 0:
            lines = [f"{where}: schema created (version {after})"]
        else:
            lines = [f"{where}: schema migrated from version {before} to {after}"]
        pki_dir = opts["pki_dir"]
        if os.path.isdir(os.path.join(pki_dir, "minions")):
            files = FileKeyStore(pki_dir)
            imported = PgKeyStore(db, master_id=master_id(opts),
                                  max_pending=option(opts, "max_pending_keys", int)).import_records(files.records())
            if imported:
                lines.append(f"imported {imported} minion key(s) from {pki_dir} (ids without a key in the "
                             "database; the files are left as they are)")
        return lines
    except StoreError:
        raise
    finally:
        db.close()
