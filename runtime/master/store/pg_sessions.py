"""The session store of a master on PostgreSQL: its own sessions in SQLite, what masters share
in the database.

A session is bound to the master the minion authenticated with (its keys were agreed with that
master, and only that master's publisher carries the publish key it was given), and its replay
window is checked on every request.  So sessions, windows, publish key epochs and the start time
stay in the master's SQLite file in sock_dir (``SQLiteSessionStore``): a request never waits for
the database, and a master keeps serving the minions it has while PostgreSQL is unreachable.
Shared through PostgreSQL:

* one-shot nonces (:meth:`claim_nonce`): a hello or a client proof is accepted once by all the
  masters together (``INSERT ... ON CONFLICT``: of two masters claiming one nonce, one wins);
* the registry of sessions (``saltpan_sessions``: sid, minion, master, created, last seen) and of
  masters (``saltpan_masters``: start, last maintenance pass), kept by :meth:`open_session`,
  :meth:`revoke`, :meth:`reset` and :meth:`share_presence`, read by :meth:`holders`: which master
  holds which minion;
* revocations (:meth:`revoke`): the minion's registry rows go, and a ``revoke`` change is recorded
  for the other masters to drop their sessions of it (``runtime.master.changes``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from runtime.crypt.handshake import SessionKeys, now_ms
from runtime.crypt.publish import PublishKey
from runtime.master.store.errors import StoreUnavailable
from runtime.master.store.pg import PgDatabase
from runtime.master.store.pg_changes import record_change
from runtime.master.store.sqlite_sessions import SQLiteSessionStore

if TYPE_CHECKING:
    from runtime.master.store.pg import Conn

log = logging.getLogger("saltpan.master.store")

REGISTRY_SEEN_STEP_MS = 60_000
"""A session's ``last_seen`` in the registry is moved once it is this far behind (not at every
heartbeat): the registry tells which master holds a minion, and only orders a minion's rows by it."""


class PgSessionStore:
    def __init__(self, local: SQLiteSessionStore, db: PgDatabase, *, master_id: str):
        self.local = local
        self.db = db
        self.master_id = master_id
        self._claims = 0
        self._synced: dict[bytes, int] = {}    # sid -> last_seen written to the registry (share_presence)

    def close(self) -> None:
        self.local.close()
        self.db.close()

    # ------------------------------------------------------------ this master's own
    def get_session(self, sid: bytes) -> SessionKeys | None:
        return self.local.get_session(sid)

    def admit(self, sid: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        self.local.admit(sid, counter, ts_ms, now_ms)

    def minion_sessions(self, minion_id: str) -> list[bytes]:
        return self.local.minion_sessions(minion_id)

    def session_count(self) -> int:
        return self.local.session_count()

    def last_seen(self) -> dict[str, int]:
        return self.local.last_seen()

    def current_publish_key(self) -> PublishKey:
        return self.local.current_publish_key()

    def next_publication(self) -> tuple[PublishKey, int]:
        return self.local.next_publication()

    def publish_key_for(self, sid: bytes) -> PublishKey:
        return self.local.publish_key_for(sid)

    def rotate_publish_key(self, reason: str, now: int | None = None) -> PublishKey:
        return self.local.rotate_publish_key(reason, now)

    def rotate_if_older(self, max_age_ms: int, now: int | None = None) -> PublishKey | None:
        return self.local.rotate_if_older(max_age_ms, now)

    def started_ms(self) -> int:
        return self.local.started_ms()

    # ------------------------------------------------------------ kept in the registry too
    def open_session(self, keys: SessionKeys) -> PublishKey:
        """In the registry first (an auth needs the database anyway): a session the other masters
        cannot see is never handed out."""
        self.db.run(lambda c: c.execute(
            "INSERT INTO saltpan_sessions (sid, minion_id, master_id, created, last_seen) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (sid) DO NOTHING",
            (keys.sid, keys.minion_id, self.master_id, keys.created_ms, keys.created_ms)))
        pkey = self.local.open_session(keys)
        self._forget_registry(lambda c: c.execute(   # the oldest the local store dropped beyond its limit
            "DELETE FROM saltpan_sessions WHERE minion_id = %s AND master_id = %s AND NOT (sid = ANY(%s))",
            (keys.minion_id, self.master_id, self.local.minion_sessions(keys.minion_id))))
        return pkey

    def drop_session(self, sid: bytes) -> bool:
        dropped = self.local.drop_session(sid)
        self._forget_registry(lambda c: c.execute("DELETE FROM saltpan_sessions WHERE sid = %s", (sid,)))
        return dropped

    def expire_idle(self, idle_ms: int, now: int | None = None) -> list[str]:
        return self.local.expire_idle(idle_ms, now)    # the registry follows at share_presence()

    def _forget_registry(self, work: Callable[[Conn], object]) -> None:
        """Registry rows of sessions this master no longer has: best effort (share_presence()
        puts the registry right at its next pass if the database is away now)."""
        try:
            self.db.run(work)
        except StoreUnavailable as exc:
            log.warning("session registry not updated now (%s); the next maintenance pass will", exc.message)

    def revoke(self, minion_id: str, reason: str = "revoked", now: int | None = None) -> PublishKey:
        """This master's sessions of ``minion_id`` first (what this master serves is cut off even
        if the database is away), then the registry and a ``revoke`` change for the others."""
        pkey = self.local.revoke(minion_id, reason, now)

        def work(conn: Conn) -> None:
            conn.execute("DELETE FROM saltpan_sessions WHERE minion_id = %s", (minion_id,))
            record_change(conn, "revoke", {"ids": [minion_id], "reason": reason}, self.master_id)

        self.db.run(work)
        return pkey

    def revoke_here(self, minion_id: str, reason: str) -> PublishKey:
        return self.local.revoke(minion_id, reason)

    def reset(self, now: int | None = None) -> PublishKey:
        """Master start: the database first (a master that cannot reach it does not start:
        docs/operations.md), then this master's own sessions."""
        current = now_ms() if now is None else now

        def work(conn: Conn) -> None:
            conn.execute("DELETE FROM saltpan_sessions WHERE master_id = %s", (self.master_id,))
            conn.execute("DELETE FROM saltpan_nonces WHERE expires < %s", (current,))
            conn.execute("INSERT INTO saltpan_masters (master_id, started, seen) VALUES (%s, %s, %s) "
                      "ON CONFLICT (master_id) DO UPDATE SET started = excluded.started, seen = excluded.seen",
                      (self.master_id, current, current))

        self.db.run(work)
        self._synced.clear()
        return self.local.reset(current)

    # ------------------------------------------------------------ shared
    def claim_nonce(self, scope: str, nonce: bytes, expires_ms: int) -> bool:
        current = now_ms()
        self._claims += 1
        if self._claims % 256 == 0:
            self.db.run(lambda c: c.execute("DELETE FROM saltpan_nonces WHERE expires < %s", (current,)))
        row = self.db.run(lambda c: c.execute(
            "INSERT INTO saltpan_nonces (scope, nonce, expires) VALUES (%s, %s, %s) "
            "ON CONFLICT (scope, nonce) DO UPDATE SET expires = excluded.expires "
            "WHERE saltpan_nonces.expires < %s RETURNING 1", (scope, nonce, expires_ms, current)).fetchone())
        return row is not None

    def share_presence(self, now: int | None = None) -> None:
        """Write this master's new sessions, and those last written ``REGISTRY_SEEN_STEP_MS`` ago or
        more, to the registry, drop the rows of sessions it no longer has, and mark the master seen."""
        current = now_ms() if now is None else now
        sessions = self.local.sessions_seen()
        live = {sid for sid, _, _, _ in sessions}
        synced = self._synced
        changed = [(sid, minion, created, seen) for sid, minion, created, seen in sessions
                   if sid not in synced or seen - synced[sid] >= REGISTRY_SEEN_STEP_MS or seen < synced[sid]]

        def work(conn: Conn) -> None:
            conn.execute("INSERT INTO saltpan_masters (master_id, started, seen) VALUES (%s, %s, %s) "
                      "ON CONFLICT (master_id) DO UPDATE SET seen = excluded.seen",
                      (self.master_id, self.local.started_ms() or current, current))
            conn.execute("DELETE FROM saltpan_sessions WHERE master_id = %s AND NOT (sid = ANY(%s))",
                      (self.master_id, list(live)))
            if changed:
                conn.execute(
                    "INSERT INTO saltpan_sessions (sid, minion_id, master_id, created, last_seen) "
                    "SELECT * FROM unnest(%s::bytea[], %s::text[], %s::text[], %s::bigint[], %s::bigint[]) "
                    "ON CONFLICT (sid) DO UPDATE SET last_seen = excluded.last_seen",
                    ([s[0] for s in changed], [s[1] for s in changed], [self.master_id] * len(changed),
                     [s[2] for s in changed], [s[3] for s in changed]))

        self.db.run(work)
        # what the registry holds for each live session: just written, or as before
        self._synced = {sid: synced[sid] for sid in live if sid in synced} | {s[0]: s[3] for s in changed}

    def holders(self) -> dict[str, tuple[str, int]]:
        rows = self.db.run(lambda c: c.execute(
            "SELECT DISTINCT ON (minion_id) minion_id, master_id, last_seen FROM saltpan_sessions "
            "ORDER BY minion_id, last_seen DESC").fetchall(), transaction=False)
        return {m: (master, int(seen)) for m, master, seen in rows}
