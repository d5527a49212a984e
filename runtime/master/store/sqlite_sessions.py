"""The master's session state in SQLite: sessions with their replay windows, one-shot nonces,
publish key epochs, the master's start.  Every MWorker (a separate process) opens the same
SQLite file in sock_dir.

Why SQLite: its write lock is shared by processes, so "check the window and record the counter"
is one ``BEGIN IMMEDIATE`` transaction that two workers can never both win — a request delivered
to two workers at once is processed once.  WAL mode lets readers proceed during writes; the file
is 0600 in the 0700 sock_dir; ``synchronous=NORMAL`` because this is runtime state that the
master rebuilds on restart (:meth:`SQLiteSessionStore.reset`); what must survive a restart (the
claimed nonces) is also covered by the start time when it does not (a crash losing the last
transactions, a tmpfs sock_dir after a reboot).

Atomic operations the security argument relies on:

- :meth:`admit`: session alive + fresh timestamp + counter never seen, then recorded.
- :meth:`open_session`: insert a session and read the current publish key together.
- :meth:`revoke`: drop a minion's sessions and start a new publish epoch together, so a request
  admitted before the revocation can only ever see the old key, and none after it.
- :meth:`publish_key_for`: the current publish key, only for a session that still exists.
- :meth:`reset` (master start): sessions forgotten, claimed nonces kept until they expire, the
  start time recorded for :meth:`started_ms` (replays across a restart).

``runtime.master.sessions.SessionStore`` is the interface.  With ``master_store: postgres``
this file stays the master's own (sessions are bound to the master a minion authenticated with)
and ``runtime.master.store.pg_sessions`` adds what masters share.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from runtime.crypt.errors import UnknownSession
from runtime.crypt.handshake import SessionKeys, now_ms
from runtime.crypt.publish import PublishKey
from runtime.crypt.replay import DEFAULT_MAX_SKEW_MS, WINDOW_SIZE, check_fresh, window_admit
from runtime.master.store.sqlite_db import Migration, migrate

DB_NAME = "sessions.sqlite"

# Connections inherited through fork() are parked here, never closed or used: closing SQLite's
# handle in a child can disturb the parent's locks (SQLite: do not carry a connection over fork).
_INHERITED: list[sqlite3.Connection] = []

MIGRATIONS: tuple[Migration, ...] = ((1, """
CREATE TABLE IF NOT EXISTS sessions (
    sid BLOB PRIMARY KEY, minion_id TEXT NOT NULL, c2s BLOB NOT NULL, s2c BLOB NOT NULL,
    created INTEGER NOT NULL, last_seen INTEGER NOT NULL, hi INTEGER NOT NULL, bits BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_minion ON sessions (minion_id, created);
CREATE TABLE IF NOT EXISTS nonces (
    scope TEXT NOT NULL, nonce BLOB NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (scope, nonce)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS master_runs (
    started INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS publish_keys (
    epoch INTEGER PRIMARY KEY, key BLOB NOT NULL, created INTEGER NOT NULL, serial INTEGER NOT NULL,
    reason TEXT NOT NULL
)
"""),)


class SQLiteSessionStore:
    """``SessionStore`` in one SQLite file shared by the master's processes.

    One object per process (it reconnects after a fork); thread-safe within the process.
    ``path`` may be ``":memory:"`` for a single-process store (tests, tools).
    """

    def __init__(self, path: str, *, window: int = WINDOW_SIZE, max_skew_ms: int = DEFAULT_MAX_SKEW_MS,
                 max_sessions_per_minion: int = 4, busy_timeout_s: float = 10.0, master_id: str = "") -> None:
        self.path = path
        self.master_id = master_id
        self.window = window
        self.max_skew_ms = max_skew_ms
        self.max_sessions_per_minion = max_sessions_per_minion
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._claims = 0
        self._started: int | None = None
        with self._tx():
            pass

    @classmethod
    def in_sock_dir(cls, sock_dir: str, *, master_id: str = "") -> SQLiteSessionStore:
        from runtime.private_files import ensure_private_dir
        return cls(os.path.join(ensure_private_dir(sock_dir), DB_NAME), master_id=master_id)

    # ------------------------------------------------------------ connection
    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:" and not os.path.exists(self.path):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
            os.close(fd)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        migrate(conn, MIGRATIONS, self.path)
        return conn

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None or self._pid != os.getpid():
                if self._conn is not None:
                    _INHERITED.append(self._conn)  # from the parent: never reuse, never close
                self._conn = self._connect()
                self._pid = os.getpid()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # ------------------------------------------------------------ publish keys
    def _current_key(self, conn: sqlite3.Connection, now: int) -> PublishKey:
        row = conn.execute("SELECT epoch, key, created FROM publish_keys ORDER BY epoch DESC LIMIT 1").fetchone()
        if row is None:
            return self._new_epoch(conn, "first", now)
        return PublishKey(row[0], row[1], row[2])

    def _new_epoch(self, conn: sqlite3.Connection, reason: str, now: int) -> PublishKey:
        row = conn.execute("SELECT MAX(epoch) FROM publish_keys").fetchone()
        pkey = PublishKey.generate((row[0] or 0) + 1, now)
        conn.execute("INSERT INTO publish_keys (epoch, key, created, serial, reason) VALUES (?, ?, ?, 0, ?)",
                     (pkey.epoch, pkey.key, pkey.created_ms, reason[:200]))
        conn.execute("DELETE FROM publish_keys WHERE epoch < ?", (pkey.epoch - 1,))
        return pkey

    def current_publish_key(self) -> PublishKey:
        # every heartbeat asks: a read transaction (WAL readers never wait for the write lock, nor
        # hold it), and a write one only before the first epoch exists
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT epoch, key, created FROM publish_keys ORDER BY epoch DESC LIMIT 1").fetchone()
        if row is not None:
            return PublishKey(row[0], row[1], row[2])
        with self._tx() as conn:
            return self._current_key(conn, now_ms())

    def next_publication(self) -> tuple[PublishKey, int]:
        """The current publish key and a serial never handed out before in its epoch."""
        with self._tx() as conn:
            pkey = self._current_key(conn, now_ms())
            serial = conn.execute("UPDATE publish_keys SET serial = serial + 1 WHERE epoch = ? RETURNING serial",
                                  (pkey.epoch,)).fetchone()[0]
            return pkey, serial

    def rotate_publish_key(self, reason: str, now: int | None = None) -> PublishKey:
        with self._tx() as conn:
            return self._new_epoch(conn, reason, now_ms() if now is None else now)

    def rotate_if_older(self, max_age_ms: int, now: int | None = None) -> PublishKey | None:
        """Periodic rotation (``publish_session``): a new epoch when the current one is older."""
        current = now_ms() if now is None else now
        with self._tx() as conn:
            pkey = self._current_key(conn, current)
            if current - pkey.created_ms < max_age_ms:
                return None
            return self._new_epoch(conn, "periodic", current)

    # ------------------------------------------------------------ sessions
    def open_session(self, keys: SessionKeys) -> PublishKey:
        """Record a new session (dropping that minion's oldest beyond ``max_sessions_per_minion``)
        and return the current publish key, in one transaction."""
        with self._tx() as conn:
            conn.execute("INSERT INTO sessions (sid, minion_id, c2s, s2c, created, last_seen, hi, bits) "
                         "VALUES (?, ?, ?, ?, ?, ?, 0, x'')",
                         (keys.sid, keys.minion_id, keys.c2s, keys.s2c, keys.created_ms, keys.created_ms))
            conn.execute("DELETE FROM sessions WHERE sid IN (SELECT sid FROM sessions WHERE minion_id = ? "
                         "ORDER BY created DESC, rowid DESC LIMIT -1 OFFSET ?)",
                         (keys.minion_id, self.max_sessions_per_minion))
            return self._current_key(conn, keys.created_ms)

    def get_session(self, sid: bytes) -> SessionKeys | None:
        with self._tx(write=False) as conn:
            row = conn.execute("SELECT minion_id, c2s, s2c, created FROM sessions WHERE sid = ?", (sid,)).fetchone()
        return None if row is None else SessionKeys(sid, row[0], row[1], row[2], row[3])

    def admit(self, sid: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        check_fresh(ts_ms, now_ms, self.max_skew_ms)
        with self._tx() as conn:
            row = conn.execute("SELECT hi, bits FROM sessions WHERE sid = ?", (sid,)).fetchone()
            if row is None:
                raise UnknownSession("session was revoked or expired: re-authenticate")
            hi, bits = window_admit(row[0], int.from_bytes(row[1], "big"), counter, self.window)
            conn.execute("UPDATE sessions SET hi = ?, bits = ?, last_seen = ? WHERE sid = ?",
                         (hi, bits.to_bytes(self.window // 8, "big"), now_ms, sid))

    def publish_key_for(self, sid: bytes) -> PublishKey:
        """The current publish key for a live session (``UnknownSession`` once revoked)."""
        with self._tx() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE sid = ?", (sid,)).fetchone() is None:
                raise UnknownSession("session was revoked or expired: re-authenticate")
            return self._current_key(conn, now_ms())

    def drop_session(self, sid: bytes) -> bool:
        with self._tx() as conn:
            return conn.execute("DELETE FROM sessions WHERE sid = ?", (sid,)).rowcount > 0

    def minion_sessions(self, minion_id: str) -> list[bytes]:
        with self._tx(write=False) as conn:
            return [r[0] for r in conn.execute("SELECT sid FROM sessions WHERE minion_id = ? ORDER BY created",
                                               (minion_id,))]

    def session_count(self) -> int:
        with self._tx(write=False) as conn:
            return conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]

    def last_seen(self) -> dict[str, int]:
        """Per minion id, the newest ``last_seen`` (ms) of its sessions: presence for the master."""
        with self._tx(write=False) as conn:
            return dict(conn.execute("SELECT minion_id, MAX(last_seen) FROM sessions GROUP BY minion_id"))

    def expire_idle(self, idle_ms: int, now: int | None = None) -> list[str]:
        """Drop sessions without a request for ``idle_ms``; return the minion ids affected."""
        cutoff = (now_ms() if now is None else now) - idle_ms
        with self._tx() as conn:
            ids = [r[0] for r in conn.execute("SELECT DISTINCT minion_id FROM sessions WHERE last_seen < ?",
                                              (cutoff,))]
            conn.execute("DELETE FROM sessions WHERE last_seen < ?", (cutoff,))
            return ids

    def revoke(self, minion_id: str, reason: str = "revoked", now: int | None = None) -> PublishKey:
        """Key deleted or rejected: drop every session of ``minion_id`` and start a new publish
        epoch in the same transaction.  Returns the new key."""
        with self._tx() as conn:
            conn.execute("DELETE FROM sessions WHERE minion_id = ?", (minion_id,))
            return self._new_epoch(conn, f"{reason}: {minion_id}", now_ms() if now is None else now)

    def revoke_here(self, minion_id: str, reason: str) -> PublishKey:
        return self.revoke(minion_id, reason)

    def reset(self, now: int | None = None) -> PublishKey:
        """Master start: forget every session, begin a new publish epoch, and record the start
        time (:meth:`started_ms`).  Claimed nonces are kept until they expire: a hello or client
        proof captured before the restart stays refused as a replay after it."""
        current = now_ms() if now is None else now
        with self._tx() as conn:
            conn.execute("DELETE FROM sessions")
            conn.execute("DELETE FROM nonces WHERE expires < ?", (current,))
            conn.execute("DELETE FROM master_runs")
            conn.execute("INSERT INTO master_runs (started) VALUES (?)", (current,))
            self._started = current
            return self._new_epoch(conn, "master start", current)

    def started_ms(self) -> int:
        """When the running master started (ms, its clock), 0 if :meth:`reset` never ran.  Hellos
        and client proofs made before it belong to an earlier run and are refused."""
        if self._started is None:
            with self._tx(write=False) as conn:
                row = conn.execute("SELECT MAX(started) FROM master_runs").fetchone()
            self._started = int(row[0] or 0)
        return self._started

    # ------------------------------------------------------------ one-shot nonces
    def claim_nonce(self, scope: str, nonce: bytes, expires_ms: int) -> bool:
        """True the first time (``scope``, ``nonce``) is claimed before it expires, else False."""
        current = now_ms()
        with self._tx() as conn:
            self._claims += 1
            if self._claims % 256 == 0:
                conn.execute("DELETE FROM nonces WHERE expires < ?", (current,))
            row = conn.execute("SELECT expires FROM nonces WHERE scope = ? AND nonce = ?", (scope, nonce)).fetchone()
            if row is not None and row[0] >= current:
                return False
            conn.execute("INSERT OR REPLACE INTO nonces (scope, nonce, expires) VALUES (?, ?, ?)",
                         (scope, nonce, expires_ms))
            return True

    # ------------------------------------------------------------ presence
    def share_presence(self, now: int | None = None) -> None:
        """One master: its own sessions are all there is to see."""

    def sessions_seen(self) -> list[tuple[bytes, str, int, int]]:
        """(sid, minion id, created, last seen) of every session."""
        with self._tx(write=False) as conn:
            return [(r[0], r[1], r[2], r[3]) for r in conn.execute(
                "SELECT sid, minion_id, created, last_seen FROM sessions")]

    def holders(self) -> dict[str, tuple[str, int]]:
        return {minion: (self.master_id, seen) for minion, seen in self.last_seen().items()}
