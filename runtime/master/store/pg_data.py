"""The minion data cache in PostgreSQL: what each minion last reported (grains, pillar, mine),
seen by every master sharing the database, whichever master the minion is connected to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from runtime.master.datacache import BankCache, Version
from runtime.master.store.pg import PgDatabase

UPSERT = ("INSERT INTO saltpan_minion_data (minion, bank, value, updated) VALUES (%s, %s, %s, %s) "
          "ON CONFLICT (minion, bank) DO UPDATE SET value = excluded.value, updated = excluded.updated")
UPSERT_UNLESS_NEWER = UPSERT + " WHERE saltpan_minion_data.updated < excluded.updated"


class PgDataCache(BankCache):
    def __init__(self, db: PgDatabase, *, still_known: Callable[[str], bool] | None = None,
                 max_size: int | None = None):
        super().__init__(still_known=still_known, max_size=max_size)
        self.db = db

    def close(self) -> None:
        self.db.close()

    def _put(self, minion: str, bank: str, text: str, updated: float) -> None:
        # sent again on a pooled connection found dead (PgDatabase.write): that first send may have
        # been committed and another write made since, which the repeat must leave alone
        self.db.write(UPSERT, (minion, bank, text, updated), again=UPSERT_UNLESS_NEWER)

    def _delete(self, minion: str, bank: str, updated: float, *, older_too: bool = False) -> None:
        self.db.write("DELETE FROM saltpan_minion_data WHERE minion = %s AND bank = %s AND updated "
                      + ("<= %s" if older_too else "= %s"), (minion, bank, updated))

    def _get(self, minion: str, bank: str) -> tuple[str, float] | None:
        row = self.db.run(lambda c: c.execute("SELECT value, updated FROM saltpan_minion_data WHERE minion = %s "
                                              "AND bank = %s", (minion, bank)).fetchone(), transaction=False)
        return None if row is None else (row[0], float(row[1]))

    def _rows(self, minions: list[str], banks: list[str]) -> Iterator[tuple[str, str, str, float]]:
        rows = self.db.run(lambda c: c.execute("SELECT minion, bank, value, updated FROM saltpan_minion_data WHERE "
                                               "minion = ANY(%s) AND bank = ANY(%s)", (minions, banks)).fetchall(),
                           transaction=False)
        for minion, bank, value, updated in rows:
            yield minion, bank, value, float(updated)

    def _versions(self, bank: str) -> dict[str, Version]:
        rows = self.db.run(lambda c: c.execute("SELECT minion, updated, length(value) FROM saltpan_minion_data "
                                               "WHERE bank = %s", (bank,)).fetchall(), transaction=False)
        return {m: (float(u), int(n)) for m, u, n in rows}

    def _texts(self, bank: str, minions: Iterable[str]) -> Iterator[tuple[str, str, float]]:
        wanted = list(minions)
        rows = self.db.run(lambda c: c.execute("SELECT minion, value, updated FROM saltpan_minion_data "
                                               "WHERE bank = %s AND minion = ANY(%s)", (bank, wanted)).fetchall(),
                           transaction=False)
        for minion, value, updated in rows:
            yield minion, value, float(updated)

    def minions(self) -> list[str]:
        rows = self.db.run(lambda c: c.execute("SELECT DISTINCT minion FROM saltpan_minion_data").fetchall(),
                           transaction=False)
        return sorted(r[0] for r in rows)

    def flush(self, minion: str) -> None:
        self.db.run(lambda c: c.execute("DELETE FROM saltpan_minion_data WHERE minion = %s", (minion,)))
