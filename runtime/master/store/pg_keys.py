"""The key store in PostgreSQL (``master_store: postgres``): one table shared by every master,
so a key accepted, rejected or deleted on one master is so on all of them.

``saltpan_minion_keys`` holds a row per (id, status): at most one of accepted / pending /
rejected per id (a unique index says so) plus at most one denied key.  Every write runs in
one transaction holding an advisory lock (``KEYS_LOCK``), the database-wide twin of the
file store's ``flock``: two masters admitting hellos for the same new id, or one accepting a
key while another rejects it, are serialised, and the pending cap is counted and enforced
inside that transaction, so no interleaving exceeds it or loses an update.  Each change is
recorded in ``saltpan_changes`` in the same transaction (``runtime.master.changes``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from runtime.master.keys import (
    ACCEPTED,
    DEFAULT_MAX_PENDING,
    DENIED,
    PENDING,
    REJECTED,
    STATUSES,
    KeyMatch,
    KeyRecord,
    RecordKeyStore,
    check_id,
    key_matcher,
)
from runtime.master.store.pg import PgDatabase, scalar
from runtime.master.store.pg_changes import record_change
from runtime.master.store.pg_schema import KEYS_LOCK

if TYPE_CHECKING:
    from collections.abc import Callable

    from runtime.master.store.pg import Conn

T = TypeVar("T")
_MAIN = (ACCEPTED, PENDING, REJECTED)
_ORDER = {REJECTED: 0, PENDING: 1, ACCEPTED: 2}   # lookup(): rejected wins, as in Salt


class PgKeyStore(RecordKeyStore):
    def __init__(self, db: PgDatabase, *, max_pending: int = DEFAULT_MAX_PENDING, master_id: str = "") -> None:
        self.db = db
        self.max_pending = max_pending
        self.master_id = master_id
        self._local = threading.local()

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ connection of the current write
    def _do(self, work: Callable[[Conn], T]) -> T:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return work(conn)
        return self.db.run(work)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:   # already inside (re-entrant)
            yield
            return
        with self.db.transaction("SELECT pg_advisory_xact_lock(%s)", (KEYS_LOCK,)) as conn:
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    def _record(self, action: str, changed: dict[str, list[str]]) -> None:
        if changed:
            self._do(lambda c: record_change(c, "key", {"action": action, "changed": changed}, self.master_id))

    # ------------------------------------------------------------ primitives
    def _read(self, status: str, minion_id: str) -> KeyRecord | None:
        check_id(minion_id)
        row = self._do(lambda c: c.execute("SELECT pub FROM saltpan_minion_keys WHERE minion_id = %s AND status = %s",
                                           (minion_id, status)).fetchone())
        return None if row is None else KeyRecord(minion_id, status, bytes(row[0]))

    def _write(self, status: str, minion_id: str, public_raw: bytes) -> None:
        check_id(minion_id)

        def work(conn: Conn) -> None:
            if status != DENIED:   # the one accepted / pending / rejected key of the id
                conn.execute("DELETE FROM saltpan_minion_keys WHERE minion_id = %s AND status <> %s",
                             (minion_id, DENIED))
            conn.execute("INSERT INTO saltpan_minion_keys (minion_id, status, pub, updated) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (minion_id, status) DO UPDATE SET pub = excluded.pub, updated = excluded.updated",
                         (minion_id, status, public_raw, time.time()))

        self._do(work)

    def _remove(self, status: str, minion_id: str) -> bool:
        check_id(minion_id)
        return self._do(lambda c: c.execute("DELETE FROM saltpan_minion_keys WHERE minion_id = %s AND status = %s",
                                            (minion_id, status)).rowcount) > 0

    def _ids(self, status: str) -> list[str]:
        rows = self._do(lambda c: c.execute("SELECT minion_id FROM saltpan_minion_keys WHERE status = %s",
                                            (status,)).fetchall())
        return sorted((r[0] for r in rows), key=str.lower)

    def _count(self, status: str, limit: int) -> int:
        return int(self._do(lambda c: scalar(
            c, "SELECT count(*) FROM (SELECT 1 FROM saltpan_minion_keys WHERE status = %s LIMIT %s) AS counted",
            (status, limit))))

    # ------------------------------------------------------------ one query where the base makes several
    def lookup(self, minion_id: str) -> KeyRecord | None:
        check_id(minion_id)
        rows = self._do(lambda c: c.execute("SELECT status, pub FROM saltpan_minion_keys WHERE minion_id = %s "
                                            "AND status <> %s", (minion_id, DENIED)).fetchall())
        if not rows:
            return None
        status, pub = min(rows, key=lambda r: _ORDER[r[0]])
        return KeyRecord(minion_id, status, bytes(pub))

    def list_keys(self) -> dict[str, list[str]]:
        rows = self._do(lambda c: c.execute("SELECT status, minion_id FROM saltpan_minion_keys").fetchall())
        out: dict[str, list[str]] = {status: [] for status in STATUSES}
        for status, minion_id in rows:
            out[status].append(minion_id)
        return {status: sorted(ids, key=str.lower) for status, ids in out.items()}

    # ------------------------------------------------------------ writes, announced to the other masters
    def admit(self, minion_id: str, public_raw: bytes, *, auto_accept: bool = False) -> str:
        check_id(minion_id)
        record = self.lookup(minion_id)
        if record is not None and record.status == ACCEPTED and record.public_raw == public_raw:
            return "accepted"     # the common case (every re-authentication): no lock, no write
        with self._locked():
            outcome = super().admit(minion_id, public_raw, auto_accept=auto_accept)
            status = {"accepted": ACCEPTED, "pending": PENDING, "denied": DENIED}.get(outcome)
            if status is not None and not (record is not None and record.status == status == PENDING):
                self._record("admit", {status: [minion_id]})
        return outcome

    def accept(self, match: KeyMatch, *, include_rejected: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]:
        with self._locked():
            changed = super().accept(match, include_rejected=include_rejected, include_denied=include_denied)
            self._record("accept", changed)
        return changed

    def reject(self, match: KeyMatch, *, include_accepted: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]:
        with self._locked():
            changed = super().reject(match, include_accepted=include_accepted, include_denied=include_denied)
            self._record("reject", changed)
        return changed

    def delete(self, match: KeyMatch) -> dict[str, list[str]]:
        with self._locked():
            changed = super().delete(match)
            self._record("delete", changed)
        return changed

    def _describe(self, match: KeyMatch, show: Callable[[KeyRecord], str]) -> dict[str, dict[str, str]]:
        rows: list[Any] = self._do(lambda c: c.execute("SELECT status, minion_id, pub FROM saltpan_minion_keys")
                                   .fetchall())
        wanted = set(self._wanted(match, [r[1] for r in rows]))
        out: dict[str, dict[str, str]] = {}
        for status in STATUSES:
            for _, minion_id, pub in sorted((r for r in rows if r[0] == status and r[1] in wanted),
                                            key=lambda r: r[1].lower()):
                out.setdefault(status, {})[minion_id] = show(KeyRecord(minion_id, status, bytes(pub)))
        return out

    @staticmethod
    def _wanted(match: KeyMatch, ids: list[str]) -> Iterator[str]:
        wanted = key_matcher(match)
        return (i for i in ids if wanted(i))
