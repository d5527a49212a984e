"""The master's minion key store, with Salt's states, directories and ``salt-key`` semantics.

Layout under ``pki_dir`` (Salt's names; directories 0700, files 0600, one PEM public key per
file named by the minion id)::

    minions/           accepted
    minions_pre/       pending (waiting for ``saltpan key -a``)
    minions_rejected/  rejected
    minions_denied/    denied: a key presented for an id that already has another key

An id has at most one of accepted / pending / rejected; a denied key sits beside them.
:meth:`FileKeyStore.admit` is what the ``_auth`` handler calls:

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
or a list of exact ids (what the operator confirmed).  Writes hold an exclusive lock shared by
every process (``_StoreLock``).  Every method returns what it
matched or changed as ``{status_dir: [ids]}`` so the caller can fire ``salt/key`` events and
revoke sessions (:meth:`runtime.master.sessions.SQLiteSessionStore.revoke`) for ids that lost
their accepted key.
"""

from __future__ import annotations

import fcntl
import fnmatch
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from runtime.crypt.errors import KeyFileError
from runtime.crypt.identity import fingerprint, public_from_pem, public_to_pem
from runtime.private_files import PrivateFileError, ensure_private_dir, read_private, write_private

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
    """What the master needs from a key store; a PostgreSQL backend implements the same."""

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


def _matcher(match: KeyMatch) -> Callable[[str], bool]:
    if isinstance(match, str):
        patterns = match.split(",")     # as salt-key: no stripping, so 'web1 ' is not 'web1'
        return lambda minion_id: any(fnmatch.fnmatchcase(minion_id, p) for p in patterns)
    return frozenset(match).__contains__


class _StoreLock:
    """One writer at a time across the master's processes (workers, ``saltpan key``): an
    exclusive ``flock`` on ``pki_dir/.keystore.lock``, plus a thread lock (``flock`` does not
    exclude threads sharing a descriptor).  Makes "count the pending keys, then write one" and
    "look up, then store" atomic, so concurrent hellos cannot exceed ``max_pending`` nor
    overwrite each other's pending key."""

    NAME = ".keystore.lock"

    def __init__(self, pki_dir: str) -> None:
        self.path = os.path.join(pki_dir, self.NAME)
        self._thread_lock = threading.Lock()
        self._fd = -1
        self._pid = -1

    def _descriptor(self) -> int:
        if self._fd < 0 or self._pid != os.getpid():   # not shared with a forked parent
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            self._pid = os.getpid()
        return self._fd

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._thread_lock:
            fd = self._descriptor()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)


class FileKeyStore:
    """:class:`KeyStore` in Salt's directory layout under ``pki_dir``."""

    def __init__(self, pki_dir: str, *, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.pki_dir = ensure_private_dir(pki_dir)
        self.max_pending = max_pending
        for status in STATUSES:
            ensure_private_dir(os.path.join(self.pki_dir, status))
        self._lock = _StoreLock(self.pki_dir)

    # ------------------------------------------------------------ files
    def _path(self, status: str, minion_id: str) -> str:
        return os.path.join(self.pki_dir, status, check_id(minion_id))

    def _read(self, status: str, minion_id: str) -> KeyRecord | None:
        path = self._path(status, minion_id)
        try:
            data = read_private(path, max_size=MAX_KEY_FILE, require_private=False)
        except FileNotFoundError:
            return None
        except PrivateFileError as exc:  # a symlink or a directory planted in the store
            raise KeyFileError(str(exc)) from None
        return KeyRecord(minion_id, status, public_from_pem(data, path))

    def _write(self, status: str, minion_id: str, public_raw: bytes) -> None:
        write_private(self._path(status, minion_id), public_to_pem(public_raw))

    def _remove(self, status: str, minion_id: str) -> bool:
        try:
            os.unlink(self._path(status, minion_id))
            return True
        except FileNotFoundError:
            return False

    def _ids(self, status: str) -> list[str]:
        directory = os.path.join(self.pki_dir, status)
        names = []
        with os.scandir(directory) as it:
            for entry in it:
                if entry.name.startswith(".tmp-") or not valid_id(entry.name):
                    continue
                if entry.is_file(follow_symlinks=False):
                    names.append(entry.name)
        return sorted(names, key=str.lower)

    def _count(self, status: str, limit: int) -> int:
        n = 0
        with os.scandir(os.path.join(self.pki_dir, status)) as it:
            for entry in it:
                if not entry.name.startswith(".tmp-"):
                    n += 1
                    if n >= limit:
                        break
        return n

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
        Atomic across the master's processes (the pending cap and "first key wins" hold under
        concurrent hellos)."""
        check_id(minion_id)
        with self._lock.held():
            return self._admit(minion_id, public_raw, auto_accept)

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
        wanted = _matcher(match)
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
        with self._lock.held():
            return self._move(self._match(match, statuses), ACCEPTED)

    def reject(self, match: KeyMatch, *, include_accepted: bool = False,
               include_denied: bool = False) -> dict[str, list[str]]:
        """Reject pending keys matching ``match``.  Ids that came from ``minions`` lost their
        accepted key: revoke their sessions and rotate the publish key."""
        statuses = (PENDING,) + ((ACCEPTED,) if include_accepted else ()) + ((DENIED,) if include_denied else ())
        with self._lock.held():
            return self._move(self._match(match, statuses), REJECTED)

    def delete(self, match: KeyMatch) -> dict[str, list[str]]:
        """Delete every key (any status) matching ``match``; returns what was deleted."""
        deleted: dict[str, list[str]] = {}
        with self._lock.held():
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
