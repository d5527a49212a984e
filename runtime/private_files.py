"""Private directories and files: 0700 directories, 0600 files, atomic writes, no symlinks.

Used for key material (pki_dir, the master's key store) and for sock_dir.  A
directory we create is 0700; an existing one owned by us that is group/other
accessible is tightened to 0700; one owned by another user is an error.  A file
is written to a temporary name in the same directory (O_EXCL, 0600), flushed
and renamed over the target, so a reader never sees half a key.
"""

from __future__ import annotations

import os
import stat


class PrivateFileError(OSError):
    """A private file or directory that is missing, unsafe or unreadable (message names the path)."""


class PrivateFileMissing(PrivateFileError, FileNotFoundError):
    """A private file that does not exist: a ``FileNotFoundError`` for callers to whom a missing file
    is normal (no key stored yet), a ``PrivateFileError`` naming the path for the others (a request
    naming a user who has no client key must be refused, never end in a traceback)."""


def ensure_private_dir(path: str) -> str:
    """Create ``path`` (and parents) as 0700 or tighten it; return its absolute path."""
    path = os.path.abspath(path)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise PrivateFileError(f"cannot create directory {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PrivateFileError(f"{path} must be a directory, not a symlink or a file")
    if st.st_uid != os.geteuid():
        raise PrivateFileError(f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()}); "
                               "fix its ownership or point the config elsewhere")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def _private_temp(directory: str) -> tuple[int, str]:
    """A new 0600 file beside the target (tempfile.mkstemp without importing tempfile, shutil,
    bz2 and lzma into every daemon)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".tmp-{os.urandom(8).hex()}")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {directory}")


def stage_private(directory: str, data: bytes, *, mode: int = 0o600, durable: bool = True) -> str:
    """A new file in ``directory`` holding ``data`` (mode 0600 unless told; on disk when
    ``durable``), to be renamed over its target (``os.replace``) or removed by the caller: the
    slow part of :func:`write_private`, which may run before a lock is taken."""
    fd, tmp = _private_temp(directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
    except BaseException:
        discard(tmp)
        raise
    return tmp


def discard(path: str) -> None:
    """Remove ``path`` if it is there."""
    try:
        os.unlink(path)
    except OSError:
        pass


def put_staged(staged: str, path: str) -> None:
    """Rename a :func:`stage_private` file over ``path`` (removed if that fails)."""
    try:
        os.replace(staged, path)
    except BaseException:
        discard(staged)
        raise


def write_private(path: str, data: bytes, *, mode: int = 0o600, durable: bool = True) -> None:
    """Atomically replace ``path`` with ``data`` (mode 0600 unless told); the directory must exist.
    ``durable``: on disk before the rename (fsync); only a load generator's throwaway keys skip it."""
    put_staged(stage_private(os.path.dirname(os.path.abspath(path)), data, mode=mode, durable=durable), path)


def read_private(path: str, *, max_size: int = 64 * 1024, require_private: bool = True) -> bytes:
    """Read a regular file without following a symlink; refuse one larger than ``max_size``.

    With ``require_private`` a file readable or writable by group/other is refused, as ssh does for
    private keys.  A missing file raises :class:`PrivateFileMissing` (both a ``FileNotFoundError``
    and a ``PrivateFileError``).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise PrivateFileMissing(f"{path} does not exist") from None
    except OSError as exc:
        raise PrivateFileError(f"cannot open {path}: {exc.strerror} (symlinks are refused)") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise PrivateFileError(f"{path} is not a regular file")
        if require_private and st.st_mode & 0o077:
            raise PrivateFileError(f"{path} is accessible by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                                   f"run: chmod 600 {path}")
        if st.st_size > max_size:
            raise PrivateFileError(f"{path} is {st.st_size} bytes, larger than the {max_size} allowed")
        return fh.read(max_size + 1)
