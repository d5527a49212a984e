"""``runtime.master.changes.ChangeLog`` on PostgreSQL: rows of ``saltpan_changes`` plus a
``NOTIFY saltpan_changes`` sent on commit of the transaction that recorded them."""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import TYPE_CHECKING, Any

from runtime.master.changes import CHANGES, EVENTS, Change, SharedEvent, Wakeup
from runtime.master.store.pg import PgDatabase, scalar

if TYPE_CHECKING:
    from runtime.master.store.pg import Conn

CHANNEL = "saltpan_changes"
EVENTS_CHANNEL = "saltpan_events"
_LOG_OF = {CHANNEL: CHANGES, EVENTS_CHANNEL: EVENTS}
CARRIED_MAX = 7999      # bytes of events a notification carries (PostgreSQL's limit: under 8000 bytes)


def record_change(conn: Conn, topic: str, data: dict[str, Any], master_id: str) -> int:
    """Record a change in the caller's transaction (announced when it commits); its number."""
    seq = scalar(conn, "INSERT INTO saltpan_changes (topic, data, master_id, at) VALUES (%s, %s, %s, %s) "
                       "RETURNING seq", (topic, json.dumps(data, sort_keys=True), master_id, time.time()))
    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(seq)))
    return int(seq)


class PgChangeLog:
    def __init__(self, db: PgDatabase):
        self.db = db
        self._listener: Conn | None = None

    def record(self, topic: str, data: dict[str, Any], master_id: str) -> int:
        return self.db.run(lambda c: record_change(c, topic, data, master_id))

    def latest(self) -> int:
        return int(self.db.run(lambda c: scalar(c, "SELECT COALESCE(MAX(seq), 0) FROM saltpan_changes"),
                               transaction=False))

    def since(self, seq: int, limit: int = 1000) -> list[Change]:
        rows = self.db.run(lambda c: c.execute(
            "SELECT seq, topic, data, master_id, at FROM saltpan_changes WHERE seq > %s ORDER BY seq LIMIT %s",
            (seq, limit)).fetchall(), transaction=False)
        return [Change(int(r[0]), r[1], json.loads(r[2]), r[3], float(r[4])) for r in rows]

    def wait(self, timeout: float) -> Wakeup:
        """LISTEN on a connection of its own (not one of the pool: it stays subscribed); what the
        notifications that arrived together named or carried (more than one may come in one packet)."""
        psycopg = self.db.psycopg
        try:
            if self._listener is None or self._listener.closed or self._listener.broken:
                self._listener = self.db.dedicated_connection()
                self._listener.execute(f"LISTEN {CHANNEL}")
                self._listener.execute(f"LISTEN {EVENTS_CHANNEL}")
            notes = list(self._listener.notifies(timeout=timeout, stop_after=1))
        except psycopg.Error as exc:
            if self._listener is not None:
                self._listener.close()
            self._listener = None
            raise self.db.unavailable(exc) from None
        logs: set[str] = set()
        events: list[SharedEvent] = []
        for note in notes:
            carried = _carried(note.payload) if note.channel == EVENTS_CHANNEL else None
            if carried is not None:
                events.extend(carried)
            elif note.channel in _LOG_OF:
                logs.add(_LOG_OF[note.channel])
        return Wakeup(frozenset(logs), tuple(events))

    def prune(self, keep_s: float) -> int:
        return int(self.db.run(lambda c: c.execute("DELETE FROM saltpan_changes WHERE at < %s",
                                                   (time.time() - keep_s,)).rowcount))

    # ------------------------------------------------------------ events of the masters' buses
    def record_events(self, master_id: str, events: list[tuple[str, bytes]]) -> None:
        if not events:
            return
        now = time.time()
        # One statement in autocommit (no BEGIN, COMMIT or separate NOTIFY round trip); the
        # notification goes out when it commits, carrying the events with their numbers when they
        # fit (the other masters then need not read them), else empty: "read the log".
        self.db.write("WITH added AS (INSERT INTO saltpan_events (master_id, tag, data, at) "
                      "SELECT %s, * FROM unnest(%s::text[], %s::bytea[], %s::float8[]) RETURNING seq, tag, data), "
                      "carried AS (SELECT json_build_object('m', %s::text, 'at', %s::float8, 'e', json_agg("
                      "json_build_array(seq, tag, translate(encode(data, 'base64'), E'\\n', '')) ORDER BY seq))::text AS p "
                      "FROM added) "
                      "SELECT pg_notify(%s, CASE WHEN octet_length(p) <= %s THEN p ELSE '' END) FROM carried",
                      (master_id, [t for t, _ in events], [d for _, d in events], [now] * len(events), master_id,
                       now, EVENTS_CHANNEL, CARRIED_MAX))

    def latest_event(self) -> int:
        return int(self.db.run(lambda c: scalar(c, "SELECT COALESCE(MAX(seq), 0) FROM saltpan_events"),
                               transaction=False))

    def events_since(self, seq: int, limit: int = 1000) -> list[SharedEvent]:
        rows = self.db.run(lambda c: c.execute(
            "SELECT seq, master_id, tag, data, at FROM saltpan_events WHERE seq > %s ORDER BY seq LIMIT %s",
            (seq, limit)).fetchall(), transaction=False)
        return [SharedEvent(int(r[0]), r[1], r[2], bytes(r[3]), float(r[4])) for r in rows]

    def prune_events(self, keep_s: float) -> int:
        return int(self.db.run(lambda c: c.execute("DELETE FROM saltpan_events WHERE at < %s",
                                                   (time.time() - keep_s,)).rowcount))

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self.db.close()


def _carried(payload: str) -> list[SharedEvent] | None:
    """The events a notification of the events log carries, None when it carries none (an empty
    payload, or one this version cannot read: the log is read instead)."""
    if not payload:
        return None
    try:
        note = json.loads(payload)
        master_id, at = str(note["m"]), float(note["at"])
        return [SharedEvent(int(seq), master_id, str(tag), base64.b64decode(data), at) for seq, tag, data in note["e"]]
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None
