"""The minion data cache: each minion's last grains and last compiled pillar.

The master targets grain and pillar expressions against it (expected minions),
and ``compile --all`` uses the grains as its default fleet.  SQLite under
cachedir, readable by several processes.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from runtime.master import jsonsafe
from runtime.master.cachedb import open_cache_db


class DataCache(Protocol):
    def store(self, minion: str, bank: str, data: Any) -> None: ...

    def fetch(self, minion: str, bank: str) -> Any: ...

    def minions(self) -> list[str]: ...

    def flush(self, minion: str) -> None: ...


_SCHEMA = ("CREATE TABLE IF NOT EXISTS data (minion TEXT, bank TEXT, value TEXT, updated REAL, "
           "PRIMARY KEY (minion, bank))")


class SQLiteDataCache:
    def __init__(self, cachedir: str):
        self.path, self._db = open_cache_db(cachedir, "minion_data.sqlite", _SCHEMA)

    def close(self) -> None:
        self._db.close()

    def store(self, minion: str, bank: str, data: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO data VALUES (?, ?, ?, ?)",
                         (minion, bank, jsonsafe.dumps(data), time.time()))

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
