"""The minion data cache: per minion and bank (``grains``, ``pillar``, ``mine``, ...), the last
value stored.

The master targets grain and pillar expressions against it (expected minions), and
``compile --all`` uses the grains as its default fleet.  :class:`DataCache` is the interface;
:class:`BankCache` holds its rules once over a backend's rows (SQLite under cachedir, or
PostgreSQL shared by masters: ``runtime.master.store``, whose factory alone names a backend).

Bounds on what a minion can make the master hold and redo (issue 16):

* ``max_size`` (config ``max_minion_data_size``): no entry larger than this many bytes
  of JSON is stored; :class:`DataTooLarge` is raised instead, and the entry the bank held
  for that minion is dropped (the master then treats the minion as having no data there,
  rather than acting on stale data).
* :meth:`BankCache.all` decodes each entry once per change and keeps it, within a
  budget per process, so a publish does not JSON-decode every minion's grains and pillar
  again; :meth:`BankCache.view` defers even that until a target needs data.

``still_known(minion)``, when given (the master's workers), is asked after every store: data
stored for a minion that no longer has a session is removed again, so a request admitted just
before its key was deleted cannot leave data behind for the id's next holder
(``runtime.master.revocation``).
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.master import jsonsafe

DECODED_BUDGET = 32 * 1024 * 1024    # characters of JSON kept decoded per process (beyond: decoded per use)


@dataclass(frozen=True)
class Snapshot:
    """One minion's entries in some banks, as one read found them (:meth:`DataCache.snapshot`):
    what a request compares its writes with, and reads, instead of a read per bank."""

    minion: str
    banks: frozenset[str]
    rows: Mapping[str, tuple[str, float]]     # bank -> (JSON text, updated), for the banks with an entry

    def covers(self, minion: str, bank: str) -> bool:
        return minion == self.minion and bank in self.banks

    def value(self, bank: str) -> Any:
        """A fresh copy of the entry, None when there was none."""
        row = self.rows.get(bank)
        return json.loads(row[0]) if row else None

    def updated(self, bank: str) -> float | None:
        row = self.rows.get(bank)
        return row[1] if row else None


class DataCache(Protocol):
    def store(self, minion: str, bank: str, data: Any, *, unless_same: bool = False,
              known: Snapshot | None = None) -> bool:
        """Keep ``data`` as the minion's entry in ``bank`` (:class:`DataTooLarge` past max_size).
        With ``unless_same``, an entry equal to the stored one is not written again, and its
        ``updated`` stays; the stored one is the one in ``known`` when that covers the bank (read
        earlier in the same request, so a write made since by another request is not seen: a value
        equal to the one read then is not written over it), else read now.  Whether it was written."""

    def snapshot(self, minion: str, banks: Iterable[str]) -> Snapshot:
        """The minion's entries in ``banks``, in one read."""

    def snapshots(self, minions: Iterable[str], banks: Iterable[str]) -> dict[str, Snapshot]:
        """:meth:`snapshot` of each of ``minions``, all in one read (a worker's batch of requests)."""

    def fetch(self, minion: str, bank: str) -> Any:
        """A fresh copy of the entry (the caller may change it), None when there is none."""

    def updated(self, minion: str, bank: str) -> float | None:
        """When the entry was stored (time.time()), None when there is none."""

    def minions(self) -> list[str]:
        """Every minion with an entry in any bank, sorted."""

    def flush(self, minion: str) -> None:
        """Forget every entry of ``minion``."""

    def all(self, bank: str) -> dict[str, Any]:
        """Every minion's entry in ``bank``: shared, read-only values."""

    def view(self, bank: str) -> Mapping[str, Any]:
        """``all(bank)`` read only when first looked into."""

    def close(self) -> None: ...


class DataTooLarge(Exception):
    """An entry over ``max_minion_data_size``: not stored (``reason`` ``too_large``)."""

    reason = "too_large"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


Version = tuple[float, int]
"""What tells two stored copies of an entry apart: (updated, length of its JSON)."""


class BankCache(abc.ABC):
    """:class:`DataCache`'s rules over a backend's rows of (minion, bank, JSON text, updated)."""

    def __init__(self, *, still_known: Callable[[str], bool] | None = None, max_size: int | None = None):
        self.still_known = still_known
        self.max_size = max_size
        # (minion, bank) -> (version, decoded value), shared by callers of all(): read-only
        self._decoded: dict[tuple[str, str], tuple[Version, Any]] = {}
        self._decoded_chars = 0

    # ------------------------------------------------------------ rows
    @abc.abstractmethod
    def _put(self, minion: str, bank: str, text: str, updated: float) -> None:
        """Insert or replace the row."""

    @abc.abstractmethod
    def _delete(self, minion: str, bank: str, updated: float, *, older_too: bool = False) -> None:
        """Delete the row if it still has ``updated`` (or, with ``older_too``, any ``updated`` up to
        it): a row written since, by another request or master, stays.  The same statement sent
        twice (PostgreSQL's pooled connection found dead after it committed) deletes nothing more.
        Between masters "since" is by their clocks, as for every ``updated`` they compare: the
        masters of a cluster keep their clocks in step (NTP)."""

    @abc.abstractmethod
    def _get(self, minion: str, bank: str) -> tuple[str, float] | None:
        """(text, updated) of the row."""

    @abc.abstractmethod
    def _rows(self, minions: list[str], banks: list[str]) -> Iterator[tuple[str, str, str, float]]:
        """(minion, bank, text, updated) of the rows of ``minions`` in ``banks``."""

    @abc.abstractmethod
    def _versions(self, bank: str) -> dict[str, Version]:
        """{minion: version} of every row of ``bank``."""

    @abc.abstractmethod
    def _texts(self, bank: str, minions: Iterable[str]) -> Iterator[tuple[str, str, float]]:
        """(minion, text, updated) of the rows of ``bank`` for ``minions``."""

    @abc.abstractmethod
    def minions(self) -> list[str]: ...

    @abc.abstractmethod
    def flush(self, minion: str) -> None: ...

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the cache holds open."""

    # ------------------------------------------------------------ the interface
    def store(self, minion: str, bank: str, data: Any, *, unless_same: bool = False,
              known: Snapshot | None = None) -> bool:
        text = jsonsafe.dumps(data)          # ASCII: characters are bytes
        if self.max_size is not None and len(text) > self.max_size:
            self._delete(minion, bank, time.time(), older_too=True)   # no stale value left in its place
            raise DataTooLarge(f"{bank} of {minion} would take {len(text)} bytes, more than max_minion_data_size "
                               f"({self.max_size}): not stored (trim it, or raise max_minion_data_size on the "
                               "master)")
        if unless_same:
            # a read instead of a write (and, on PostgreSQL, of a commit's WAL flush): the grains
            # each pillar request carries are most often the ones stored at the last
            row = known.rows.get(bank) if known is not None and known.covers(minion, bank) else self._get(minion, bank)
            if row is not None and row[0] == text:
                return False
        updated = time.time()
        self._put(minion, bank, text, updated)
        if self.still_known is not None and not self.still_known(minion):
            # revoked (and flushed) while this request was being handled: undo our write only
            self._delete(minion, bank, updated)
        return True

    def snapshot(self, minion: str, banks: Iterable[str]) -> Snapshot:
        return self.snapshots((minion,), banks)[minion]

    def snapshots(self, minions: Iterable[str], banks: Iterable[str]) -> dict[str, Snapshot]:
        wanted = sorted(set(banks))
        who = sorted(set(minions))
        rows: dict[str, dict[str, tuple[str, float]]] = {m: {} for m in who}
        if who and wanted:
            for minion, bank, text, updated in self._rows(who, wanted):
                rows[minion][bank] = (text, updated)
        covered = frozenset(wanted)
        return {m: Snapshot(m, covered, found) for m, found in rows.items()}

    def fetch(self, minion: str, bank: str) -> Any:
        row = self._get(minion, bank)
        return json.loads(row[0]) if row else None

    def updated(self, minion: str, bank: str) -> float | None:
        row = self._get(minion, bank)
        return row[1] if row else None

    def all(self, bank: str) -> dict[str, Any]:
        """Entries are decoded once per change and kept (up to ``DECODED_BUDGET`` characters of
        JSON per process): the values are shared between calls and must not be changed
        (``fetch`` gives a copy to change)."""
        versions = self._versions(bank)
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
            for minion, text, updated in self._texts(bank, missing):
                out[minion] = decoded = json.loads(text)
                self._keep((minion, bank), (updated, len(text)), decoded)
        return out

    def view(self, bank: str) -> Mapping[str, Any]:
        return _LazyBank(lambda: self.all(bank))

    def _keep(self, key: tuple[str, str], version: Version, value: Any) -> None:
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
