"""The minion data cache: each minion's last grains and last compiled pillar.

The master targets grain and pillar expressions against it (expected minions),
and ``compile --all`` uses the grains as its default fleet.  SQLite under
cachedir, readable by several processes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from runtime.master import jsonsafe
from runtime.master.cachedb import open_cache_db


class DataCache(Protocol):
    def store(self, minion: str, bank: str, data: Any) -> None: ...

    def fetch(self, minion: str, bank: str) -> Any: ...

    def minions(self) -> list[str]: ...

    def flush(self, minion: str) -> None: ...


DB_NAME = "minion_data.sqlite"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS data (minion TEXT, bank TEXT, value TEXT, updated REAL, "
           "PRIMARY KEY (minion, bank))")


class SQLiteDataCache:
    """``still_known(minion)``, when given (the master's workers), is asked after every store:
    data stored for a minion that no longer has a session is removed again, so a request
    admitted just before its key was deleted cannot leave data behind for the id's next holder
    (``runtime.master.revocation``)."""

    def __init__(self, cachedir: str, *, still_known: Callable[[str], bool] | None = None):
        self.path, self._db = open_cache_db(cachedir, DB_NAME, _SCHEMA)
        self.still_known = still_known

    def close(self) -> None:
        self._db.close()

    def store(self, minion: str, bank: str, data: Any) -> None:
        updated = time.time()
        self._db.execute("INSERT OR REPLACE INTO data VALUES (?, ?, ?, ?)",
                         (minion, bank, jsonsafe.dumps(data), updated))
        if self.still_known is not None and not self.still_known(minion):
            # revoked (and flushed) while this request was being handled: undo our write only
            self._db.execute("DELETE FROM data WHERE minion=? AND bank=? AND updated=?", (minion, bank, updated))

    def fetch(self, minion: str, bank: str) -> Any:
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
        return {m: json.loads(v) for m, v in self._db.execute("SELECT minion, value FROM data WHERE bank=?",
                                                              (bank,))}
