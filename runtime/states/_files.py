"""Filesystem helpers for the ``file`` states: atomic writes, modes, owners, diffs, parents.

Every file write goes through :func:`atomic_write`: the new content is written to an
unnamed temporary inode in the target's directory (``O_TMPFILE``; a hidden named temp
file where the filesystem lacks it), given its final mode and owner, fsync'ed, and only
then renamed over the target. A process killed at any point leaves either the old file
or the new one, never a mixture, and (with ``O_TMPFILE``) no temporary file at all.
"""

from __future__ import annotations

import difflib
import errno
import grp
import os
import pwd
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TEMP_PREFIX = ".saltpan-"


class FileStateError(Exception):
    """A file operation failed; the message is what the state reports as its comment."""


def new_ret(name: str, result: bool | None = True) -> dict[str, Any]:
    """A file state's return, in Salt's key order, before anything is known."""
    return {"name": name, "changes": {}, "result": result, "comment": ""}


def fail(ret: dict[str, Any], message: str) -> dict[str, Any]:
    """``ret`` failed with ``message`` as its comment."""
    ret["result"] = False
    ret["comment"] = message
    return ret


# ---------------------------------------------------------------------------
# modes and owners


def normalize_mode(mode: Any) -> str | None:
    """Salt's mode normalisation: ``644`` / ``0o644`` / ``'00644'`` -> ``'0644'``."""
    if mode is None:
        return None
    text = str(mode).replace("0o", "0").strip('"').strip("'")
    return text.lstrip("0").zfill(4)


def mode_bits(mode: str) -> int:
    """``'0644'`` -> 0o644 (raises FileStateError on nonsense)."""
    try:
        value = int(mode, 8)
    except (TypeError, ValueError):
        raise FileStateError(f"Invalid mode '{mode}': use an octal string like '0644'") from None
    if value < 0 or value > 0o7777:
        raise FileStateError(f"Invalid mode '{mode}': out of range")
    return value


def current_umask() -> int:
    """The process umask, read without changing it (thread-safe on Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_file_mode() -> str:
    """The mode a new file gets from the umask (what Salt reports for a new file)."""
    return normalize_mode(oct((0o777 ^ current_umask()) & 0o666)) or "0644"


def _resolve_id(value: Any, lookup: Callable[[str], int]) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    try:
        return lookup(str(value))
    except KeyError:
        return int(value) if str(value).isdigit() else None


def resolve_uid(user: Any) -> int | None:
    """uid for a user name or number; None when it does not exist."""
    return _resolve_id(user, lambda name: pwd.getpwnam(name).pw_uid)


def resolve_gid(group: Any) -> int | None:
    """gid for a group name or number; None when it does not exist."""
    return _resolve_id(group, lambda name: grp.getgrnam(name).gr_gid)


def check_user_group(user: Any, group: Any) -> str:
    """Salt's ``_check_user``: an error text naming a missing user/group, or ''."""
    err = ""
    if user not in (None, "") and resolve_uid(user) is None:
        err += f"User {user} is not available "
    if group not in (None, "") and resolve_gid(group) is None:
        err += f"Group {group} is not available"
    return err.strip()


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


@dataclass
class Stats:
    uid: int
    gid: int
    user: str
    group: str
    mode: str  # normalised, e.g. "0644"
    is_link: bool
    is_dir: bool


def stats(path: str, follow_symlinks: bool = True) -> Stats | None:
    try:
        st = os.stat(path) if follow_symlinks else os.lstat(path)
    except OSError:
        return None
    return Stats(
        uid=st.st_uid,
        gid=st.st_gid,
        user=user_name(st.st_uid),
        group=group_name(st.st_gid),
        mode=normalize_mode(oct(stat.S_IMODE(st.st_mode))) or "0000",
        is_link=stat.S_ISLNK(st.st_mode),
        is_dir=stat.S_ISDIR(st.st_mode),
    )


def _owner_differs(wanted: Any, current_id: int, current_name: str,
                   resolve: Callable[[Any], int | None]) -> bool:
    if wanted in (None, ""):
        return False
    if wanted == current_name or wanted == current_id:
        return False
    wanted_id = resolve(wanted)
    return wanted_id is None or wanted_id != current_id


def perm_changes(path: str, user: Any, group: Any, mode: str | None,
                 follow_symlinks: bool = True) -> dict[str, Any]:
    """What Salt's ``check_perms``/``check_file_meta`` would change: keys user, group, mode."""
    st = stats(path, follow_symlinks)
    if st is None:
        return {}
    changes: dict[str, Any] = {}
    if _owner_differs(user, st.uid, st.user, resolve_uid):
        changes["user"] = user
    if _owner_differs(group, st.gid, st.group, resolve_gid):
        changes["group"] = group
    if mode is not None and not (st.is_link and not follow_symlinks) and mode != st.mode:
        changes["mode"] = mode
    return changes


def apply_perms(path: str, user: Any, group: Any, mode: str | None,
                follow_symlinks: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Set owner and mode like Salt's ``check_perms``; returns (changes, error comments)."""
    changes = perm_changes(path, user, group, mode, follow_symlinks)
    errors: list[str] = []
    if "user" in changes or "group" in changes:
        uid = resolve_uid(user) if "user" in changes else -1
        gid = resolve_gid(group) if "group" in changes else -1
        try:
            if follow_symlinks:
                os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
            else:
                os.lchown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        except OSError as exc:
            for key in ("user", "group"):
                if key in changes:
                    errors.append(f"Failed to change {key} to {changes.pop(key)}: {exc.strerror}")
    if "mode" in changes:
        try:
            os.chmod(path, mode_bits(changes["mode"]))
        except (OSError, FileStateError) as exc:
            errors.append(f"Failed to change mode to {changes.pop('mode')}: {exc}")
    elif mode is not None and ("user" in changes or "group" in changes):
        # chown clears set-uid/set-gid bits: put the mode back
        st = stats(path, follow_symlinks)
        if st is not None and st.mode != mode and not st.is_link:
            os.chmod(path, mode_bits(mode))
    return changes, errors


# ---------------------------------------------------------------------------
# atomic writes


def _fsync_dir(dirname: str) -> None:
    try:
        fd = os.open(dirname, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_tmpfile(dirname: str) -> tuple[int, str | None]:
    """An fd for new content in ``dirname``: unnamed (O_TMPFILE) when possible."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            return os.open(dirname, flag | os.O_WRONLY, 0o600), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=dirname)
    return fd, tmp


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _link_unnamed(fd: int, dest: str) -> bool:
    """Give the O_TMPFILE inode ``fd`` the name ``dest``; False when the kernel refuses."""
    try:
        os.link(f"/proc/self/fd/{fd}", dest)
        return True
    except FileExistsError:
        raise
    except OSError:
        pass
    try:  # linkat(fd, "", AT_FDCWD, dest, AT_EMPTY_PATH): works where /proc links cross mounts
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.linkat(fd, b"", -100, os.fsencode(dest), 0x1000) == 0:
            return True
        if ctypes.get_errno() == errno.EEXIST:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest)
    except (OSError, AttributeError):
        if os.path.lexists(dest):
            raise
    return False


def _named_temp(dirname: str, data: bytes, mode: int, uid: int | None, gid: int | None) -> str:
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=dirname)
    try:
        _fill(fd, data, mode, uid, gid)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _fill(fd: int, data: bytes, mode: int, uid: int | None, gid: int | None) -> None:
    _write_all(fd, data)
    if uid is not None or gid is not None:
        os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
    os.fchmod(fd, mode)  # after chown, which may clear set-id bits
    os.fsync(fd)


def atomic_write(path: str, data: bytes, mode: int, uid: int | None = None, gid: int | None = None) -> None:
    """Replace ``path`` by ``data`` atomically, with ``mode`` and owner set before the rename."""
    dirname = os.path.dirname(os.path.abspath(path))
    fd, tmp = _open_tmpfile(dirname)
    named: str | None = tmp
    try:
        _fill(fd, data, mode, uid, gid)
        if tmp is None:
            for _ in range(100):
                candidate = os.path.join(dirname, f"{TEMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}.tmp")
                try:
                    if _link_unnamed(fd, candidate):
                        named = candidate
                    break
                except FileExistsError:
                    continue
            if named is None:  # the unnamed inode cannot be linked here: use a named temp file
                named = _named_temp(dirname, data, mode, uid, gid)
        assert named is not None
        os.replace(named, path)
        named = None
    finally:
        os.close(fd)
        if named is not None:
            try:
                os.unlink(named)
            except OSError:
                pass
    _fsync_dir(dirname)


def write_preserving(path: str, data: bytes) -> None:
    """Atomically replace an existing file's content, keeping its mode and owner."""
    st = os.stat(path)
    atomic_write(path, data, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def copy_backup(path: str, backup_path: str) -> None:
    """Copy ``path`` to ``backup_path`` (content, mode, owner, times), atomically."""
    st = os.stat(path)
    with open(path, "rb") as src:
        data = src.read()
    atomic_write(backup_path, data, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    try:
        os.utime(backup_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    except OSError:
        pass


def minion_backup(path: str, cachedir: str) -> str:
    """Salt's ``backup: minion``: keep a timestamped copy under ``<cachedir>/file_backup``."""
    now = time.time()
    stamp = time.strftime("%a_%b_%d_%H:%M:%S", time.localtime(now))
    stamp += f"_{int((now % 1) * 1_000_000):06d}_" + time.strftime("%Y", time.localtime(now))
    rel = os.path.abspath(path).lstrip(os.sep)
    dest_dir = os.path.join(cachedir, "file_backup", os.path.dirname(rel))
    os.makedirs(dest_dir, mode=0o700, exist_ok=True)
    dest = os.path.join(dest_dir, f"{os.path.basename(path)}_{stamp}")
    copy_backup(path, dest)
    return dest


# ---------------------------------------------------------------------------
# directories


def make_dirs(path: str, mode: str | None = None, user: Any = None, group: Any = None) -> list[str]:
    """Create ``path`` and its missing parents, each with ``mode``/owner (Salt's makedirs_perms).

    Returns the directories created, outermost first. ``mode`` is applied with chmod, so
    it does not depend on the umask; without it new directories get 0777 minus the umask.
    """
    missing: list[str] = []
    current = os.path.normpath(path)
    while not os.path.isdir(current):
        if os.path.lexists(current):
            raise FileStateError(f"The path '{current}' already exists and is not a directory")
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    created: list[str] = []
    for directory in reversed(missing):
        try:
            os.mkdir(directory)
        except FileExistsError:
            continue
        except OSError as exc:
            raise FileStateError(f"Unable to create directory {directory}: {exc.strerror}") from exc
        created.append(directory)
        _, errors = apply_perms(directory, user, group, mode)
        if errors:
            raise FileStateError("; ".join(errors))
    return created


def remove_path(path: str) -> None:
    """Remove a file, a symlink (not its target) or a directory tree; nothing when absent."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def dir_mode_for_file(mode: str | None) -> str | None:
    """Salt: parents made for a file get the file's mode plus x on every non-zero digit."""
    if mode is None:
        return None
    digits = list(str(mode))[-3:]
    return "".join(str(int(d) | 1) if d != "0" else d for d in digits)


# ---------------------------------------------------------------------------
# content comparison


def is_binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def split_lines(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines(True)


def unified_diff(old: list[str], new: list[str]) -> str:
    """Salt's ``get_diff``: a unified diff without file names ('--- ', '+++ ' headers)."""
    return "".join(difflib.unified_diff(old, new))


def content_diff(old: bytes, new: bytes, show_changes: bool = True) -> str:
    """Salt's file diff, including its binary-file messages; '' when equal.

    With ``show_changes`` False, a differing content reports Salt's placeholder instead.
    """
    if old == new:
        return ""
    if not show_changes:
        return "<show_changes=False>"
    old_bin, new_bin = is_binary(old), is_binary(new)
    if old_bin and new_bin:
        return "Replace binary file"
    if old_bin:
        return "Replace binary file with text file"
    if new_bin:
        return "Replace text file with binary file"
    return unified_diff(split_lines(old), split_lines(new))


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
