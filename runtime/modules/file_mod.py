"""file: path helpers (join, dirname, basename, normpath) and read-only questions about this host's
files (file_exists, directory_exists, readdir, contains_regex, get_user, stats, read, access,
get_sum, get_diff ...); the functions that change files are its part ``_file_changes``.

Offline (saltpan compile, the master's pillar) the host questions get the answer Salt gives on a
host where the path does not exist: False, or Salt's error for the functions that raise one.
"""

from __future__ import annotations

import errno
import glob as globmod
import grp
import hashlib
import os
import pwd
import re
import stat
from typing import TYPE_CHECKING, Any, NoReturn

from runtime.modules.registry import constant, pure, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

PARTS = ("_file_changes",)   # write, append, replace, line, blockreplace, mkdir, copy, chown ...


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _not_found(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises Salt's error "Path not found: <path>"."""
    raise _error(f"Path not found: {os.path.expanduser(path)}")


def _no_dir(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises Salt's error "A valid directory was not specified: <path>"."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        raise _error("Dir path must be absolute.")
    raise _error(f"A valid directory was not specified: {path}")


def _no_link(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises Salt's error "A valid link was not specified: <path>"."""
    path = os.path.expandvars(os.path.expanduser(path))
    if not os.path.isabs(path):
        raise _error(f"Path to link must be absolute: {path}")
    raise _error(f"A valid link was not specified: {path}")


def _no_file(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises FileNotFoundError, as Salt does for a file that does not exist."""
    raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)


# -- pure path helpers --------------------------------------------------------------------------


@pure
def join(env: ModuleEnv, *args: str) -> str:
    """os.path.join of the arguments."""
    return os.path.join(*args)


@pure
def dirname(env: ModuleEnv, path: str) -> str:
    """os.path.dirname."""
    return os.path.dirname(path)


@pure
def basename(env: ModuleEnv, path: str) -> str:
    """os.path.basename."""
    return os.path.basename(path)


@pure
def normpath(env: ModuleEnv, path: str) -> str:
    """os.path.normpath."""
    return os.path.normpath(path)


# -- questions about this host's files ----------------------------------------------------------


@reads_host(absent=constant(False))
def file_exists(env: ModuleEnv, path: str) -> bool:
    """True when path is a regular file (or a link to one)."""
    return os.path.isfile(os.path.expanduser(path))


@reads_host(absent=constant(False))
def directory_exists(env: ModuleEnv, path: str) -> bool:
    """True when path is a directory."""
    return os.path.isdir(os.path.expanduser(path))


@reads_host(absent=constant(False))
def path_exists_glob(env: ModuleEnv, path: str) -> bool:
    """True when the glob matches something."""
    return bool(globmod.glob(os.path.expanduser(path)))


@reads_host(absent=_no_dir)
def readdir(env: ModuleEnv, path: str) -> list[str]:
    """'.', '..' and the entries of a directory (an absolute path)."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        raise _error("Dir path must be absolute.")
    if not os.path.isdir(path):
        raise _error(f"A valid directory was not specified: {path}")
    return [".", "..", *os.listdir(path)]


@reads_host(absent=constant(False))
def contains(env: ModuleEnv, path: str, text: Any) -> bool:
    """True when the file holds text (stripped)."""
    path = os.path.expanduser(path)
    if not os.path.exists(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return str(text).strip() in fh.read()
    except OSError:
        return False


@reads_host(absent=constant(False))
def contains_regex(env: ModuleEnv, path: str, regex: str, lchar: str = "") -> bool:
    """True when a line of the file matches regex (lchar stripped from the left of each line)."""
    path = os.path.expanduser(path)
    if not os.path.exists(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if lchar:
                    line = line.lstrip(lchar)
                if re.search(regex, line):
                    return True
        return False
    except OSError:
        return False


@reads_host(absent=constant(False))
def contains_glob(env: ModuleEnv, path: str, glob_expr: str) -> bool:
    """True when a line of the file matches the glob."""
    import fnmatch

    path = os.path.expanduser(path)
    if not os.path.exists(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return any(fnmatch.fnmatch(line, glob_expr) for line in fh)
    except OSError:
        return False


def _stats(path: str, follow_symlinks: bool = True, hash_type: str | None = None) -> dict[str, Any]:
    path = os.path.expanduser(path)
    exists = os.path.exists if follow_symlinks else os.path.lexists
    if not exists(path):
        try:
            st = os.lstat(path)
        except OSError:
            raise _error(f"Path not found: {path}") from None
    else:
        st = os.stat(path) if follow_symlinks else os.lstat(path)
    ret: dict[str, Any] = {
        "inode": st.st_ino, "uid": st.st_uid, "gid": st.st_gid,
        "group": _group_name(st.st_gid), "user": _user_name(st.st_uid),
        "atime": st.st_atime, "mtime": st.st_mtime, "ctime": st.st_ctime, "size": st.st_size,
        "mode": oct(stat.S_IMODE(st.st_mode)).replace("0o", "0").lstrip("0").zfill(4),
    }
    if hash_type:
        ret["sum"] = _digest(path, hash_type)
    kinds = ((stat.S_ISDIR, "dir"), (stat.S_ISCHR, "char"), (stat.S_ISBLK, "block"), (stat.S_ISREG, "file"),
             (stat.S_ISLNK, "link"), (stat.S_ISFIFO, "pipe"), (stat.S_ISSOCK, "socket"))
    ret["type"] = "file"
    for test, kind in kinds:
        if test(st.st_mode):
            ret["type"] = kind
    ret["target"] = os.path.realpath(path) if follow_symlinks else os.path.abspath(path)
    return ret


def _user_name(uid: int) -> Any:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return uid


def _group_name(gid: int) -> Any:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return gid


@reads_host(absent=_not_found)
def stats(env: ModuleEnv, path: str, hash_type: str | None = None, follow_symlinks: bool = True) -> dict[str, Any]:
    """inode, uid, gid, user, group, times, size, mode, type and target of a path."""
    return _stats(path, follow_symlinks, hash_type)


@reads_host(absent=_not_found)
def get_user(env: ModuleEnv, path: str, follow_symlinks: bool = True) -> Any:
    """The owner's name."""
    return _stats(path, follow_symlinks).get("user", False)


@reads_host(absent=_not_found)
def get_group(env: ModuleEnv, path: str, follow_symlinks: bool = True) -> Any:
    """The group's name."""
    return _stats(path, follow_symlinks).get("group", False)


@reads_host(absent=_not_found)
def get_uid(env: ModuleEnv, path: str, follow_symlinks: bool = True) -> Any:
    """The owner's uid."""
    return _stats(path, follow_symlinks).get("uid", -1)


@reads_host(absent=_not_found)
def get_gid(env: ModuleEnv, path: str, follow_symlinks: bool = True) -> Any:
    """The group's gid."""
    return _stats(path, follow_symlinks).get("gid", -1)


@reads_host(absent=_not_found)
def get_mode(env: ModuleEnv, path: str, follow_symlinks: bool = True) -> Any:
    """The permission bits, as '0644'."""
    return _stats(path, follow_symlinks).get("mode", "")


@reads_host(absent=_no_file)
def read(env: ModuleEnv, path: str, binary: bool = False) -> str | bytes:
    """The contents of a file."""
    with open(path, "rb" if binary is True else "r") as fh:
        return fh.read()


@reads_host(absent=_no_file)
def get_hash(env: ModuleEnv, path: str, form: str = "sha256", chunk_size: int = 65536) -> str:
    """Hex digest of a file."""
    return _digest(path, form, chunk_size)


def _digest(path: str, form: str, chunk_size: int = 65536) -> str:
    if not hasattr(hashlib, form):
        raise ValueError(f"Invalid hash type: {form}")
    digest = getattr(hashlib, form)()
    with open(os.path.expanduser(path), "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


@reads_host(absent=constant(False))
def is_link(env: ModuleEnv, path: str, nostat: bool = False) -> bool:
    """True when path is a symlink."""
    return os.path.islink(os.path.expanduser(path))


@reads_host(absent=_no_link)
def readlink(env: ModuleEnv, path: str, canonicalize: bool = False) -> str:
    """The target of a symlink (an absolute path)."""
    path = os.path.expandvars(os.path.expanduser(path))
    if not os.path.isabs(path):
        raise _error(f"Path to link must be absolute: {path}")
    if not os.path.islink(path):
        raise _error(f"A valid link was not specified: {path}")
    return os.path.realpath(path) if canonicalize else os.readlink(path)


def _is_kind(path: str, test: Any) -> bool:
    try:
        return bool(test(os.stat(os.path.expanduser(path)).st_mode))
    except FileNotFoundError:
        return False


@reads_host(absent=constant(False))
def is_blkdev(env: ModuleEnv, name: str) -> bool:
    """True when name is a block device."""
    return _is_kind(name, stat.S_ISBLK)


@reads_host(absent=constant(False))
def is_chrdev(env: ModuleEnv, name: str) -> bool:
    """True when name is a character device."""
    return _is_kind(name, stat.S_ISCHR)


@reads_host(absent=constant(False))
def is_fifo(env: ModuleEnv, name: str) -> bool:
    """True when name is a FIFO."""
    return _is_kind(name, stat.S_ISFIFO)


@reads_host(absent=constant({}))
def lstat(env: ModuleEnv, path: str) -> dict[str, Any]:
    """os.lstat fields of an absolute path ({} when it does not exist)."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        raise _error("Path to file must be absolute.")
    try:
        st = os.lstat(path)
    except OSError:
        return {}
    return {key: getattr(st, key) for key in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink",
                                               "st_size", "st_uid")}


@reads_host(absent=constant(False))
def access(env: ModuleEnv, path: str, mode: str) -> bool:
    """Whether the path exists (mode 'f') or is readable ('r'), writable ('w'), executable ('x')
    by this minion's user."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        raise _error("Path to link must be absolute.")
    modes = {"f": os.F_OK, "r": os.R_OK, "w": os.W_OK, "x": os.X_OK}
    if mode in modes:
        return os.access(path, modes[mode])
    if mode in modes.values():
        return os.access(path, int(mode))
    raise _error("Invalid mode specified.")


@reads_host(absent=constant("File not found"))
def get_sum(env: ModuleEnv, path: str, form: str = "sha256") -> str:
    """Hex digest of a file ("File not found" when it is not a file)."""
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        return "File not found"
    return _digest(path, form, 4096)


@reads_host(absent=constant(0))
def diskusage(env: ModuleEnv, path: str) -> int:
    """Bytes used by a file, or by the files under a directory (each inode counted once)."""
    if os.path.isfile(path):
        return os.stat(path).st_size
    total, seen = 0, set()
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_size
    return total


def _no_diff(env: ModuleEnv, file1: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises Salt's error "Failed to read <file1>: No such file or directory"."""
    raise _error(f"Failed to read {file1}: No such file or directory")


@reads_host(absent=_no_diff)
def get_diff(env: ModuleEnv, file1: str, file2: str, saltenv: str = "base", show_filenames: bool = True,
             show_changes: bool = True, template: bool = False, source_hash_file1: Any = None,
             source_hash_file2: Any = None) -> str:
    """A unified diff of two files of this host (or of the state tree: salt://), '' when equal."""
    import difflib

    texts = []
    for name in (file1, file2):
        if str(name).startswith("salt://"):
            from runtime.modules import cp_mod

            found = cp_mod.get_file_str(env, name, saltenv)
            if found is False:
                raise _error(f"Failed to read {name}: not found on the file server")
            texts.append(str(found))
            continue
        try:
            with open(name, encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
        except OSError as exc:
            raise _error(f"Failed to read {name}: {exc.strerror}") from None
    if texts[0] == texts[1]:
        return ""
    if not show_changes:
        return "<show_changes=False>"
    names = (file1, file2) if show_filenames else ("", "")
    return "".join(difflib.unified_diff(texts[0].splitlines(True), texts[1].splitlines(True), *names))
