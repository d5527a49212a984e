"""The key store in Salt's pki_dir layout: one PEM public key per file, named by the minion id,
in ``minions/``, ``minions_pre/``, ``minions_rejected/``, ``minions_denied/`` (directories
0700, files 0600).  The default backend (``master_store: sqlite``): what ``salt-key`` users
and their scripts expect to find on disk."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from runtime.crypt.errors import KeyFileError
from runtime.crypt.identity import public_from_pem, public_to_pem
from runtime.master.keys import (
    DEFAULT_MAX_PENDING,
    MAX_KEY_FILE,
    STATUSES,
    KeyRecord,
    RecordKeyStore,
    check_id,
    valid_id,
)
from runtime.private_files import (
    PrivateFileError,
    discard,
    ensure_private_dir,
    put_staged,
    read_private,
    stage_private,
    write_private,
)


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

    def close(self) -> None:
        with self._thread_lock:
            if self._fd >= 0 and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = -1

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._thread_lock:
            fd = self._descriptor()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)


class _StagedFiles(threading.local):
    """This thread's key files written ahead of the lock (``FileKeyStore._staged``), by key."""

    def __init__(self) -> None:
        self.files: dict[bytes, str] = {}


class FileKeyStore(RecordKeyStore):
    """:class:`KeyStore` in Salt's directory layout under ``pki_dir``."""

    def __init__(self, pki_dir: str, *, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.pki_dir = ensure_private_dir(pki_dir)
        self.max_pending = max_pending
        for status in STATUSES:
            ensure_private_dir(os.path.join(self.pki_dir, status))
        self._lock = _StoreLock(self.pki_dir)
        self._stage = _StagedFiles()

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
        staged = self._stage.files.pop(public_raw, None)
        if staged is None:
            write_private(self._path(status, minion_id), public_to_pem(public_raw))
        else:
            put_staged(staged, self._path(status, minion_id))

    @contextmanager
    def _staged(self, public_raw: bytes) -> Iterator[None]:
        """The key's file written and synced in pki_dir (same filesystem as its status directories)
        before the lock; ``_write`` renames it where it belongs, or it is removed unused."""
        files = self._stage.files
        files[public_raw] = stage_private(self.pki_dir, public_to_pem(public_raw))
        try:
            yield
        finally:
            unused = files.pop(public_raw, None)
            if unused is not None:
                discard(unused)

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

    def _locked(self) -> AbstractContextManager[None]:
        return self._lock.held()

    def close(self) -> None:
        self._lock.close()
