"""The minion data cache in SQLite: <cachedir>/minion_data.sqlite, readable by several processes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from runtime.master.datacache import BankCache, Version
from runtime.master.store.sqlite_db import Migration, open_cache_db

DB_NAME = "minion_data.sqlite"

MIGRATIONS: tuple[Migration, ...] = ((1, "CREATE TABLE IF NOT EXISTS data (minion TEXT, bank TEXT, value TEXT, "
                                         "updated REAL, PRIMARY KEY (minion, bank))"),)


class SQLiteDataCache(BankCache):
    def __init__(self, cachedir: str, *, still_known: Callable[[str], bool] | None = None,
                 max_size: int | None = None):
        super().__init__(still_known=still_known, max_size=max_size)
        self.path, self._db = open_cache_db(cachedir, DB_NAME, MIGRATIONS, synchronous_normal=True)

    def close(self) -> None:
        self._db.close()

    def _put(self, minion: str, bank: str, text: str, updated: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO data VALUES (?, ?, ?, ?)", (minion, bank, text, updated))

    def _delete(self, minion: str, bank: str, updated: float, *, older_too: bool = False) -> None:
        self._db.execute("DELETE FROM data WHERE minion=? AND bank=? AND updated" + ("<=?" if older_too else "=?"),
                         (minion, bank, updated))

    def _get(self, minion: str, bank: str) -> tuple[str, float] | None:
        row = self._db.execute("SELECT value, updated FROM data WHERE minion=? AND bank=?", (minion, bank)).fetchone()
        return (row[0], row[1]) if row else None

    def _rows(self, minions: list[str], banks: list[str]) -> Iterator[tuple[str, str, str, float]]:
        who, which = ", ".join("?" * len(minions)), ", ".join("?" * len(banks))
        yield from self._db.execute(f"SELECT minion, bank, value, updated FROM data WHERE minion IN ({who}) "
                                    f"AND bank IN ({which})", (*minions, *banks)).fetchall()

    def _versions(self, bank: str) -> dict[str, Version]:
        return {m: (u, n) for m, u, n in self._db.execute(
            "SELECT minion, updated, length(value) FROM data WHERE bank=?", (bank,))}

    def _texts(self, bank: str, minions: Iterable[str]) -> Iterator[tuple[str, str, float]]:
        wanted = set(minions)
        for minion, value, updated in self._db.execute("SELECT minion, value, updated FROM data WHERE bank=?",
                                                       (bank,)).fetchall():
            if minion in wanted:
                yield minion, value, updated

    def minions(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT minion FROM data ORDER BY minion")]

    def flush(self, minion: str) -> None:
        self._db.execute("DELETE FROM data WHERE minion=?", (minion,))
