"""The master's minion key store: Salt's key states and ``salt-key`` semantics, for every backend.

Salt's states, named after its directories under ``pki_dir``::

    minions/           accepted
    minions_pre/       pending (waiting for ``saltpan key -a``)
    minions_rejected/  rejected
    minions_denied/    denied: a key presented for an id that already has another key

An id has at most one of accepted / pending / rejected; a denied key sits beside them.
:meth:`RecordKeyStore.admit` is what the ``_auth`` handler calls:

=====================  ==========================================  ==========
key on file for id      presented key                               outcome
=====================  ==========================================  ==========
rejected               any                                         rejected
accepted               same / different (stored in denied)         accepted / denied
pending                same / different (stored in denied)         pending (accepted with auto_accept) / denied
none                   any, ``auto_accept``                        accepted
none                   any, pending set below ``max_pending``      pending
none                   any, pending set full                       pending_full (nothing stored)
=====================  ==========================================  ==========

The pending limit stops key-store flooding with new ids (CVE-2023-20897's class).  Operator
commands (:meth:`accept`, :meth:`reject`, :meth:`delete`, :meth:`finger`, :meth:`print_keys`)
take Salt's match: a glob, or a comma-separated list of globs (taken as typed, never stripped),
or a list of exact ids (what the operator confirmed).  Writes are one writer at a time across
every process and every master sharing the store (``RecordKeyStore._locked``).  Every method
returns what it matched or changed as ``{status: [ids]}`` so the caller can fire ``salt/key``
events and revoke sessions (``runtime.master.revocation``) for ids that lost their accepted key.

:class:`KeyStore` is the interface; :class:`RecordKeyStore` holds these rules once over a
backend's primitives (read, write, remove, list, count, lock): the files of Salt's pki_dir
layout, or a PostgreSQL table (``runtime.master.store``; only its factory names a backend).
"""

from __future__ import annotations

import abc
import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from runtime.crypt.errors import KeyFileError
from runtime.crypt.identity import fingerprint, public_to_pem

ACCEPTED = "minions"
PENDING = "minions_pre"
REJECTED = "minions_rejected"
DENIED = "minions_denied"
STATUSES = (ACCEPTED, PENDING, REJECTED, DENIED)
STATE_NAMES = {ACCEPTED: "accepted", PENDING: "pending", REJECTED: "rejected", DENIED: "denied"}
DEFAULT_MAX_PENDING = 1000
MAX_ID_BYTES = 255
MAX_KEY_FILE = 4096
_BAD_ID_CHARS = re.compile(r"[\x00-\x1f\x7f/\\]")


class KeyStoreError(Exception):
    """A key store operation that cannot be done (the message says why)."""


class InvalidMinionId(KeyStoreError):
    pass


def id_problem(minion_id: object) -> str | None:
    """Why ``minion_id`` cannot name a key file, or None when it can.

    Salt refuses ids with ``/``, ``\\`` or NUL and ids that do not resolve to a file directly in
    pki_dir (``""``, ``.``, ``..``).  We also refuse control characters, ids over 255 bytes (the
    file name limit) and the ``.tmp-`` prefix of our temporary files."""
    if not isinstance(minion_id, str):
        return f"a minion id must be a string, not {type(minion_id).__name__}"
    if minion_id in ("", ".", ".."):
        return f"{minion_id!r} is not a usable minion id"
    if minion_id.startswith(".tmp-"):
        return "minion ids starting with '.tmp-' are reserved for the key store's temporary files"
    bad = _BAD_ID_CHARS.search(minion_id)
    if bad is not None:
        if bad.group() in "/\\\0":
            return "a minion id may not contain '/', '\\' or NUL"
        return "a minion id may not contain control characters"
    try:
        size = len(minion_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "a minion id must be valid UTF-8 text"
    if size > MAX_ID_BYTES:
        return f"a minion id may be at most {MAX_ID_BYTES} bytes long"
    return None


def valid_id(minion_id: object) -> bool:
    return id_problem(minion_id) is None


def check_id(minion_id: object) -> str:
    problem = id_problem(minion_id)
    if problem is not None:
        raise InvalidMinionId(problem)
    return minion_id  # type: ignore[return-value]


@dataclass(frozen=True)
class KeyRecord:
    minion_id: str
    status: str          # one of STATUSES
    public_raw: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_raw)


KeyMatch = str | Sequence[str]
"""Salt's key match (a glob or comma-separated globs, taken as typed: ``'web1 '`` does not match
``web1``), or a list of exact ids (what an operator confirmed: ids may hold commas and globs)."""


class KeyStore(Protocol):
    """What the master and ``saltpan key`` need from a key store."""

    def lookup(self, minion_id: str) -> KeyRecord | None: ...
    def denied_key(self, minion_id: str) -> KeyRecord | None: ...
    def is_accepted(self, minion_id: str, public_raw: bytes) -> bool: ...
    def admit(self, minion_id: str, public_raw: bytes, *, auto_accept: bool = False) -> str: ...
    def list_keys(self) -> dict[str, list[str]]: ...
    def accept(self, match: KeyMatch, *, include_rejected: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]: ...
    def reject(self, match: KeyMatch, *, include_accepted: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]: ...
    def delete(self, match: KeyMatch) -> dict[str, list[str]]: ...
    def finger(self, match: KeyMatch) -> dict[str, dict[str, str]]: ...
    def print_keys(self, match: KeyMatch) -> dict[str, dict[str, str]]: ...
    def close(self) -> None: ...


def key_matcher(match: KeyMatch) -> Callable[[str], bool]:
    if isinstance(match, str):
        patterns = match.split(",")     # as salt-key: no stripping, so 'web1 ' is not 'web1'
        return lambda minion_id: any(fnmatch.fnmatchcase(minion_id, p) for p in patterns)
    return frozenset(match).__contains__



class RecordKeyStore(abc.ABC):
    """:class:`KeyStore`'s rules over a backend's primitives.  A backend implements the
    primitives below (and may answer :meth:`lookup` and :meth:`list_keys` in one query)."""

    max_pending: int

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def _read(self, status: str, minion_id: str) -> KeyRecord | None:
        """The key of ``minion_id`` in ``status``; ``KeyFileError`` when it is unusable."""

    @abc.abstractmethod
    def _write(self, status: str, minion_id: str, public_raw: bytes) -> None:
        """Store the key in ``status`` (replacing what that status held for the id)."""

    @abc.abstractmethod
    def _remove(self, status: str, minion_id: str) -> bool:
        """Remove the id's key from ``status``; False when there was none."""

    @abc.abstractmethod
    def _ids(self, status: str) -> list[str]:
        """The ids in ``status``, sorted case-insensitively (as salt-key lists them)."""

    @abc.abstractmethod
    def _count(self, status: str, limit: int) -> int:
        """How many ids are in ``status``, counting no further than ``limit``."""

    @abc.abstractmethod
    def _locked(self) -> AbstractContextManager[None]:
        """One writer at a time across every process (and master) using this store: the
        primitives called inside see and make one consistent change."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the store holds open (files, connections)."""

    # ------------------------------------------------------------ lookups
    def lookup(self, minion_id: str) -> KeyRecord | None:
        """The accepted, pending or rejected key of ``minion_id`` (rejected wins, as in Salt)."""
        for status in (REJECTED, PENDING, ACCEPTED):
            record = self._read(status, minion_id)
            if record is not None:
                return record
        return None

    def denied_key(self, minion_id: str) -> KeyRecord | None:
        return self._read(DENIED, minion_id)

    def is_accepted(self, minion_id: str, public_raw: bytes) -> bool:
        if not valid_id(minion_id):
            return False
        record = self.lookup(minion_id)
        return record is not None and record.status == ACCEPTED and record.public_raw == public_raw

    def list_keys(self) -> dict[str, list[str]]:
        """``{"minions": [...], "minions_pre": [...], "minions_rejected": [...], "minions_denied": [...]}``"""
        return {status: self._ids(status) for status in STATUSES}

    # ------------------------------------------------------------ auth
    def admit(self, minion_id: str, public_raw: bytes, *, auto_accept: bool = False) -> str:
        """Record a key presented at auth; return accepted / pending / rejected / denied / pending_full.
        Atomic across the master's processes and the masters sharing the store (the pending cap
        and "first key wins" hold under concurrent hellos)."""
        check_id(minion_id)
        # A key accepted as presented (every re-authentication) needs no writer: answered by the
        # lookup a writer would make, without the lock (a write replaces a whole record, so a read
        # sees one record or the other).  A new key is staged before the lock: 10,000 new minions
        # at once waited in line for each other's fsync under it.
        record = self.lookup(minion_id)
        if record is not None and record.status == ACCEPTED and record.public_raw == public_raw:
            return "accepted"
        will_write = record is None or (auto_accept and record.status == PENDING and record.public_raw == public_raw)
        with self._staged(public_raw) if will_write else nullcontext(), self._locked():
            return self._admit(minion_id, public_raw, auto_accept)

    def _staged(self, public_raw: bytes) -> AbstractContextManager[None]:
        """Held around :meth:`_locked` when :meth:`admit` is about to write ``public_raw``: a backend
        may do the slow part of that write here, outside the lock (the file store writes and syncs
        the file, and its ``_write`` renames it into place); nothing by default."""
        return nullcontext()

    def _admit(self, minion_id: str, public_raw: bytes, auto_accept: bool) -> str:
        record = self.lookup(minion_id)
        if record is not None and record.status == REJECTED:
            return "rejected"
        if record is not None and record.public_raw != public_raw:
            self._write(DENIED, minion_id, public_raw)
            return "denied"
        if record is not None and record.status == ACCEPTED:
            return "accepted"
        if record is not None:  # pending with the same key
            if auto_accept:
                self._write(ACCEPTED, minion_id, public_raw)
                self._remove(PENDING, minion_id)
                return "accepted"
            return "pending"
        if auto_accept:
            self._write(ACCEPTED, minion_id, public_raw)
            return "accepted"
        if self._count(PENDING, self.max_pending) >= self.max_pending:
            return "pending_full"
        self._write(PENDING, minion_id, public_raw)
        return "pending"

    # ------------------------------------------------------------ operator commands
    def _match(self, match: KeyMatch, statuses: tuple[str, ...]) -> dict[str, list[str]]:
        wanted = key_matcher(match)
        found: dict[str, list[str]] = {}
        for status in statuses:
            ids = [i for i in self._ids(status) if wanted(i)]
            if ids:
                found[status] = ids
        return found

    def _move(self, matches: dict[str, list[str]], to_status: str) -> dict[str, list[str]]:
        """Move keys; an unusable key file (``finger`` says why) is left where it is, unmoved."""
        moved: dict[str, list[str]] = {}
        for status, ids in matches.items():
            for minion_id in ids:
                try:
                    record = self._read(status, minion_id)
                except KeyFileError:
                    continue
                if record is None:
                    continue
                # Write the new state before removing the old: lookup() prefers rejected over
                # pending over accepted, so an interrupted move never grants more than before.
                self._write(to_status, minion_id, record.public_raw)
                for other in (ACCEPTED, PENDING, REJECTED, DENIED):
                    if other != to_status and (other != DENIED or status == DENIED):
                        self._remove(other, minion_id)
                moved.setdefault(status, []).append(minion_id)
        return moved

    def accept(self, match: KeyMatch, *, include_rejected: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]:
        """Accept pending keys matching ``match`` (``*`` for all: ``saltpan key -A``).  Returns the
        ids accepted, by the status they came from."""
        statuses = (PENDING,) + ((REJECTED,) if include_rejected else ()) + ((DENIED,) if include_denied else ())
        with self._locked():
            return self._move(self._match(match, statuses), ACCEPTED)

    def reject(self, match: KeyMatch, *, include_accepted: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]:
        """Reject pending keys matching ``match``.  Ids that came from ``minions`` lost their
        accepted key: revoke their sessions and rotate the publish key."""
        statuses = (PENDING,) + ((ACCEPTED,) if include_accepted else ()) + ((DENIED,) if include_denied else ())
        with self._locked():
            return self._move(self._match(match, statuses), REJECTED)

    def delete(self, match: KeyMatch) -> dict[str, list[str]]:
        """Delete every key (any status) matching ``match``; returns what was deleted."""
        deleted: dict[str, list[str]] = {}
        with self._locked():
            for status, ids in self._match(match, STATUSES).items():
                for minion_id in ids:
                    if self._remove(status, minion_id):
                        deleted.setdefault(status, []).append(minion_id)
        return deleted

    def _describe(self, match: KeyMatch, show: Callable[[KeyRecord], str]) -> dict[str, dict[str, str]]:
        """``{status: {id: show(record)}}``; an unusable key file (corrupt, small-order key, a
        symlink) is shown as ``unusable key file: <why>`` so that it can still be listed and
        deleted."""
        out: dict[str, dict[str, str]] = {}
        for status, ids in self._match(match, STATUSES).items():
            for minion_id in ids:
                try:
                    record = self._read(status, minion_id)
                except KeyFileError as exc:
                    out.setdefault(status, {})[minion_id] = f"unusable key file: {exc}"
                    continue
                if record is not None:
                    out.setdefault(status, {})[minion_id] = show(record)
        return out

    def finger(self, match: KeyMatch) -> dict[str, dict[str, str]]:
        """``{status: {id: "ab:cd:..."}}`` for keys matching ``match`` (``saltpan key -f``)."""
        return self._describe(match, lambda r: r.fingerprint)

    def print_keys(self, match: KeyMatch) -> dict[str, dict[str, str]]:
        """``{status: {id: PEM text}}`` for keys matching ``match`` (``saltpan key -p``)."""
        return self._describe(match, lambda r: public_to_pem(r.public_raw).decode())

    # ------------------------------------------------------------ moving between backends
    def records(self) -> Iterator[KeyRecord]:
        """Every usable key, in every status (an unusable key file is left out)."""
        for status in STATUSES:
            for minion_id in self._ids(status):
                try:
                    record = self._read(status, minion_id)
                except KeyFileError:
                    continue
                if record is not None:
                    yield record

    def import_records(self, records: Iterable[KeyRecord]) -> int:
        """Store the keys of ``records`` whose id has no key here yet in that slot (the accepted /
        pending / rejected one, or the denied one); return how many were stored.  What is
        already here wins: importing twice changes nothing."""
        stored = 0
        with self._locked():
            for record in records:
                check_id(record.minion_id)
                if record.status == DENIED:
                    if self._read(DENIED, record.minion_id) is not None:
                        continue
                elif self.lookup(record.minion_id) is not None:
                    continue
                self._write(record.status, record.minion_id, record.public_raw)
                stored += 1
        return stored
