"""The minion data cache: each minion's last grains and last compiled pillar.

The master targets grain and pillar expressions against it (expected minions),
and ``compile --all`` uses the grains as its default fleet.  SQLite under
cachedir, readable by several processes.

Bounds on what a minion can make the master hold and redo (issue 16):

* ``max_size`` (config ``max_minion_data_size``): no entry larger than this many bytes
  of JSON is stored; :class:`DataTooLarge` is raised instead, and the entry the bank held
  for that minion is dropped (the master then treats the minion as having no data there,
  rather than acting on stale data).
* :meth:`SQLiteDataCache.all` decodes each entry once per change and keeps it, within a
  budget per process, so a publish does not JSON-decode every minion's grains and pillar
  again; :meth:`SQLiteDataCache.view` defers even that until a target needs data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from runtime.master import jsonsafe
from runtime.master.cachedb import open_cache_db

DECODED_BUDGET = 32 * 1024 * 1024    # characters of JSON kept decoded per process (beyond: decoded per use)


class DataCache(Protocol):
    def store(self, minion: str, bank: str, data: Any) -> None: ...

    def fetch(self, minion: str, bank: str) -> Any: ...

    def minions(self) -> list[str]: ...

    def flush(self, minion: str) -> None: ...


class DataTooLarge(Exception):
    """An entry over ``max_minion_data_size``: not stored (``reason`` ``too_large``)."""

    reason = "too_large"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


DB_NAME = "minion_data.sqlite"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS data (minion TEXT, bank TEXT, value TEXT, updated REAL, "
           "PRIMARY KEY (minion, bank))")


class SQLiteDataCache:
    """``still_known(minion)``, when given (the master's workers), is asked after every store:
    data stored for a minion that no longer has a session is removed again, so a request
    admitted just before its key was deleted cannot leave data behind for the id's next holder
    (``runtime.master.revocation``).  ``max_size`` bounds every entry (bytes of JSON)."""

    def __init__(self, cachedir: str, *, still_known: Callable[[str], bool] | None = None,
                 max_size: int | None = None):
        # synchronous=NORMAL (no fsync per commit): a cache every minion refills at its next session
        # (grains) and the master recompiles (pillar); with an fsync per store, an auth storm of
        # 10,000 minions queued 20,000 fsyncs behind SQLite's one write lock
        self.path, self._db = open_cache_db(cachedir, DB_NAME, _SCHEMA, synchronous_normal=True)
        self.still_known = still_known
        self.max_size = max_size
        # (minion, bank) -> ((updated, length), decoded value), shared by callers of all(): read-only
        self._decoded: dict[tuple[str, str], tuple[tuple[float, int], Any]] = {}
        self._decoded_chars = 0

    def close(self) -> None:
        self._db.close()

    def store(self, minion: str, bank: str, data: Any) -> None:
        text = jsonsafe.dumps(data)          # ASCII: characters are bytes
        if self.max_size is not None and len(text) > self.max_size:
            self._db.execute("DELETE FROM data WHERE minion=? AND bank=?", (minion, bank))
            raise DataTooLarge(f"{bank} of {minion} would take {len(text)} bytes, more than max_minion_data_size "
                               f"({self.max_size}): not stored (trim it, or raise max_minion_data_size on the "
                               "master)")
        updated = time.time()
        self._db.execute("INSERT OR REPLACE INTO data VALUES (?, ?, ?, ?)", (minion, bank, text, updated))
        if self.still_known is not None and not self.still_known(minion):
            # revoked (and flushed) while this request was being handled: undo our write only
            self._db.execute("DELETE FROM data WHERE minion=? AND bank=? AND updated=?", (minion, bank, updated))

    def fetch(self, minion: str, bank: str) -> Any:
        """A fresh copy (the caller may change it)."""
        row = self._db.execute("SELECT value FROM data WHERE minion=? AND bank=?", (minion, bank)).fetchone()
        return json.loads(row[0]) if row else None

    def updated(self, minion: str, bank: str) -> float | None:
        row = self._db.execute("SELECT updated FROM data WHERE minion=? AND bank=?", (minion, bank)).fetchone()
        return row[0] if row else None

    def minions(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT minion FROM data ORDER BY minion")]

    def flush(self, minion: str) -> None:
        self._db.execute("DELETE FROM data WHERE minion=?", (minion,))

    def all(self, bank: str) -> dict[str, Any]:
        """Every minion's entry in ``bank``.  Entries are decoded once per change and kept (up to
        ``DECODED_BUDGET`` characters of JSON per process): the values are shared between calls
        and must not be changed (``fetch`` gives a copy to change)."""
        versions = {m: (u, n) for m, u, n in self._db.execute(
            "SELECT minion, updated, length(value) FROM data WHERE bank=?", (bank,))}
        out: dict[str, Any] = {}
        missing = []
        for minion, version in versions.items():
            hit = self._decoded.get((minion, bank))
            if hit is not None and hit[0] == version:
                out[minion] = hit[1]
            else:
                missing.append(minion)
        for key in [k for k in self._decoded if k[1] == bank and k[0] not in versions]:
            self._forget(key)
        if missing:
            wanted = set(missing)
            for minion, value, updated in self._db.execute("SELECT minion, value, updated FROM data WHERE bank=?",
                                                           (bank,)):
                if minion in wanted:
                    out[minion] = decoded = json.loads(value)
                    self._keep((minion, bank), (updated, len(value)), decoded)
        return out

    def view(self, bank: str) -> Mapping[str, Any]:
        """``all(bank)`` as a mapping read from the database only when first looked into (a
        target that needs no data costs nothing)."""
        return _LazyBank(lambda: self.all(bank))

    def _keep(self, key: tuple[str, str], version: tuple[float, int], value: Any) -> None:
        self._forget(key)
        if self._decoded_chars + version[1] <= DECODED_BUDGET:
            self._decoded[key] = (version, value)
            self._decoded_chars += version[1]

    def _forget(self, key: tuple[str, str]) -> None:
        old = self._decoded.pop(key, None)
        if old is not None:
            self._decoded_chars -= old[0][1]


class _LazyBank(Mapping[str, Any]):
    def __init__(self, load: Callable[[], dict[str, Any]]):
        self._load = load
        self._data: dict[str, Any] | None = None

    def _rows(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._load()
        return self._data

    def __getitem__(self, minion: str) -> Any:
        return self._rows()[minion]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self._rows())
