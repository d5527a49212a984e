"""file (part of the ``file`` module, see file_mod.PARTS): the functions that change this host's
files -- write, append, prepend, touch, remove, mkdir, makedirs, copy, rename, move, symlink,
truncate, rmdir, chown, chgrp, set_mode -- and the text edits states are made of -- replace, line,
blockreplace, comment, uncomment, comment_line -- with Salt 3008's arguments and return values.

The edits run the same code as the file states (runtime/states/_textedit.py, _files.py): a change
writes the whole file atomically, keeping its owner and mode; ``backup`` keeps a copy beside it.
None of these runs offline.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host, runs_command
from runtime.states import _files as F
from runtime.states import _textedit as T

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _absolute(path: str, what: str = "File path must be absolute.") -> str:
    path = os.path.expanduser(str(path))
    if not os.path.isabs(path):
        raise _error(what)
    return path


def _lines(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """Salt's line arguments: positional, or ``args=`` (a list or one line)."""
    if "args" in kwargs:
        given = kwargs["args"]
        return list(given) if isinstance(given, list) else [given]
    return list(args)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


# -- whole files ---------------------------------------------------------------------------------


@runs_command()
def write(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> str:
    """Replace the file's content with one line per argument (or ``args=[...]``)."""
    path = os.path.expanduser(str(path))
    lines = _lines(args, kwargs)
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{line}\n" for line in lines))
    except OSError as exc:
        raise _error(f"Unable to write {path}: {exc.strerror}") from None
    return f'Wrote {len(lines)} lines to "{path}"'


@runs_command()
def append(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> str:
    """Add one line per argument at the end of an existing file (after a final newline)."""
    path = os.path.expanduser(str(path))
    lines = _lines(args, kwargs)
    try:
        F.write_preserving(path, T.append_lines(F.read_bytes(path), [str(line) for line in lines]))
    except OSError as exc:
        raise _error(f"Unable to append to {path}: {exc.strerror}") from None
    return f'Wrote {len(lines)} lines to "{path}"'


@runs_command()
def prepend(env: ModuleEnv, path: str, *args: Any, **kwargs: Any) -> str:
    """Insert one line per argument at the start of the file (created when missing)."""
    path = os.path.expanduser(str(path))
    lines = _lines(args, kwargs)
    try:
        current = F.read_bytes(path).decode("utf-8", errors="surrogateescape")
    except OSError:
        current = ""
    data = "".join(f"{line}\n" for line in lines) + current
    try:
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(data)
    except OSError as exc:
        raise _error(f"Unable to write {path}: {exc.strerror}") from None
    return f'Prepended {len(lines)} lines to "{path}"'


@runs_command()
def touch(env: ModuleEnv, name: str, atime: Any = None, mtime: Any = None) -> bool:
    """Create the file when missing and set its access and modification times (now by default)."""
    name = os.path.expanduser(str(name))
    try:
        a = int(atime) if atime not in (None, "") else None
        m = int(mtime) if mtime not in (None, "") else None
    except (TypeError, ValueError):
        raise _error("atime and mtime must be integers") from None
    try:
        if not os.path.exists(name):
            with open(name, "a"):
                pass
        if a is None and m is None:
            os.utime(name, None)
        else:
            os.utime(name, (time.time() if a is None else a, time.time() if m is None else m))
    except OSError as exc:
        raise _error(str(exc.strerror)) from None
    return os.path.exists(name)


@runs_command()
def truncate(env: ModuleEnv, path: str, length: int) -> None:
    """Cut the file to ``length`` bytes."""
    path = os.path.expanduser(str(path))
    try:
        with open(path, "rb+") as fh:
            fh.truncate(int(length))
    except OSError as exc:
        raise _error(f"Unable to truncate {path}: {exc.strerror}") from None


@runs_command()
def remove(env: ModuleEnv, path: str) -> bool:
    """Remove a file, link or directory (recursively); False when there was nothing."""
    path = _absolute(path, f"File path must be absolute: {path}")
    try:
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
            os.remove(path)
            return True
        if os.path.isdir(path):
            shutil.rmtree(path)
            return True
    except OSError as exc:
        raise _error(f"Could not remove '{path}': {exc}") from None
    return False


@runs_command()
def rmdir(env: ModuleEnv, path: str, recurse: bool = False, verbose: bool = False,
          older_than: Any = None) -> Any:
    """Remove an empty directory (with recurse, its empty subdirectories first; older_than: only
    directories not modified for that many days).  verbose: {deleted, errors, result}."""
    path = _absolute(path)
    if not os.path.isdir(path):
        raise _error(f"A valid directory was not specified: {path}")
    limit = time.time() - int(older_than) * 86400 if older_than else None
    deleted: list[str] = []
    errors: list[list[str]] = []
    ok = False

    def old_enough(target: str) -> bool:
        return limit is None or os.path.getmtime(target) < limit

    if _truthy(recurse):
        for root, dirs, _files in os.walk(path, topdown=False):
            for sub in dirs:
                target = os.path.join(root, sub)
                if old_enough(target):
                    try:
                        os.rmdir(target)
                        deleted.append(target)
                    except OSError as exc:
                        errors.append([target, str(exc)])
        ok = not errors
    if old_enough(path):
        try:
            os.rmdir(path)
            deleted.append(path)
            ok = ok or not _truthy(recurse)
        except OSError as exc:
            ok = False
            errors.append([path, str(exc)])
    return {"deleted": deleted, "errors": errors, "result": ok} if _truthy(verbose) else ok


@runs_command()
def mkdir(env: ModuleEnv, dir_path: str, user: Any = None, group: Any = None, mode: Any = None) -> bool:
    """Create the directory and its missing parents (with owner and mode)."""
    directory = os.path.normpath(os.path.expanduser(str(dir_path)))
    if not os.path.isdir(directory):
        try:
            F.make_dirs(directory, F.normalize_mode(mode), user, group)
        except (F.FileStateError, OSError) as exc:
            raise _error(str(exc)) from None
    return True


@runs_command(name="makedirs")
def makedirs_(env: ModuleEnv, path: str, user: Any = None, group: Any = None, mode: Any = None) -> Any:
    """Create the parent directories of path (end it with '/' for the directory itself); a message
    when they exist already."""
    dirname = os.path.normpath(os.path.dirname(os.path.expanduser(str(path))))
    if os.path.isdir(dirname):
        return f"Directory '{dirname}' already exists"
    if os.path.exists(dirname):
        return f"The path '{dirname}' already exists and is not a directory"
    if not os.path.isabs(dirname):
        raise _error(f"Recursive creation for path '{dirname}' would result in an infinite loop. "
                     "Please use an absolute path.")
    mkdir(env, dirname, user, group, mode)
    return None


@runs_command()
def copy(env: ModuleEnv, src: str, dst: str, recurse: bool = False, remove_existing: bool = False) -> bool:
    """Copy a file (or, with recurse, a directory: merged into dst, or replacing it with
    remove_existing); the copy gets the source's owner and mode."""
    src = _absolute(src)
    dst = os.path.expanduser(str(dst))
    if not os.path.exists(src):
        raise _error(f"No such file or directory '{src}'")
    st = os.stat(src)
    try:
        if (os.path.exists(dst) and os.path.isdir(dst)) or os.path.isdir(src):
            if not _truthy(recurse):
                raise _error("Cannot copy overwriting a directory without recurse flag set to true!")
            if _truthy(remove_existing) and os.path.exists(dst):
                shutil.rmtree(dst)
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)
    except OSError:
        raise _error(f"Could not copy '{src}' to '{dst}'") from None
    F.apply_perms(dst, F.user_name(st.st_uid), F.group_name(st.st_gid), F.normalize_mode(oct(st.st_mode & 0o7777)))
    return True


@runs_command()
def rename(env: ModuleEnv, src: str, dst: str) -> bool:
    """Rename src to dst (os.rename: the same file system)."""
    src = _absolute(src)
    dst = os.path.expanduser(str(dst))
    try:
        os.rename(src, dst)
    except OSError:
        raise _error(f"Could not rename '{src}' to '{dst}'") from None
    return True


@runs_command()
def move(env: ModuleEnv, src: str, dst: str, disallow_copy_and_unlink: bool = False) -> Any:
    """Move src to dst, across file systems too (disallow_copy_and_unlink: rename only)."""
    if _truthy(disallow_copy_and_unlink):
        return rename(env, src, dst)
    src = _absolute(src, "Source path must be absolute.")
    dst = _absolute(dst, "Destination path must be absolute.")
    try:
        shutil.move(src, dst)
    except OSError as exc:
        raise _error(f"Unable to move '{src}' to '{dst}': {exc}") from None
    return {"result": True, "comment": f"'{src}' moved to '{dst}'"}


@runs_command()
def symlink(env: ModuleEnv, src: str, path: str, force: bool = False, atomic: bool = False,
            follow_symlinks: bool = True) -> bool:
    """Make path a symlink to src (force: replace what is there; atomic: through a rename)."""
    path = _absolute(path, f"Link path must be absolute: {path}")
    exists = os.path.exists if _truthy(follow_symlinks) else os.path.lexists
    force, atomic = _truthy(force), _truthy(atomic)
    if os.path.islink(path):
        if os.path.normpath(os.readlink(path)) == os.path.normpath(str(src)):
            return True
        if not force and not atomic:
            raise _error(f"Found existing symlink: {path}")
    if exists(path) and not force and not atomic:
        raise _error(f"Existing path is not a symlink: {path}")
    try:
        if atomic:
            temp = f"{path}.{os.getpid()}.tmp"
            os.symlink(str(src), temp)
            os.replace(temp, path)
            return True
        if force and (os.path.islink(path) or exists(path)):
            os.unlink(path)
        os.symlink(str(src), path)
    except OSError:
        raise _error(f"Could not create '{path}'") from None
    return True


# -- owners and modes ----------------------------------------------------------------------------


@runs_command()
def chown(env: ModuleEnv, path: str, user: Any, group: Any) -> Any:
    """Set the owner and group (names or ids); None when done, else Salt's message ("File not found",
    "User does not exist" ...)."""
    path = os.path.expanduser(str(path))
    uid = F.resolve_uid(user) if user not in (None, "") else -1
    gid = F.resolve_gid(group) if group not in (None, "") else -1
    err = ""
    if uid is None:
        err += "User does not exist\n"
    if gid is None:
        err += "Group does not exist\n"
    if not os.path.exists(path):
        if not err and os.path.islink(path) and uid is not None and gid is not None:
            os.lchown(path, uid, gid)   # a dangling link
            return None
        err += "File not found"
    if err or uid is None or gid is None:
        return err
    os.chown(path, uid, gid)
    return None


@runs_command()
def chgrp(env: ModuleEnv, path: str, group: Any) -> Any:
    """Set the group (a name or id); None when done, else Salt's message."""
    return chown(env, path, None, group)


@runs_command()
def set_mode(env: ModuleEnv, path: str, mode: Any) -> str:
    """Set the permission bits ('0644', 644 ...); returns the new mode."""
    path = os.path.expanduser(str(path))
    digits = str(mode).lstrip("0Oo") or "0"
    if not os.path.exists(path):
        raise _error(f"{path}: File not found")
    try:
        os.chmod(path, int(digits, 8))
    except (ValueError, OSError):
        return f"Invalid Mode {digits}"
    return str(F.normalize_mode(oct(os.stat(path).st_mode & 0o7777)))


# -- text edits ----------------------------------------------------------------------------------


def _text_file(path: str) -> tuple[str, bytes]:
    path = os.path.realpath(os.path.expanduser(str(path)))
    if not os.path.isfile(path):
        raise _error(f"File not found: {path}")
    return path, F.read_bytes(path)


def _save(path: str, old: bytes, new: bytes, backup: Any) -> None:
    if backup not in (None, False, ""):
        F.copy_backup(path, f"{path}{backup}")
    F.write_preserving(path, new)


def _edit_answer(old: bytes, new: bytes, show_changes: Any) -> Any:
    if _truthy(show_changes):
        return F.unified_diff(F.split_lines(old), F.split_lines(new))
    return old != new


@reads_host(absent=constant(False))
def search(env: ModuleEnv, path: str, pattern: str, flags: Any = 8, bufsize: Any = 1,
           ignore_if_missing: bool = False, multiline: bool = False) -> bool:
    """True when pattern matches the file's content (a Python regex; flags as file.replace)."""
    real = os.path.realpath(os.path.expanduser(str(path)))
    if not os.path.isfile(real):
        if _truthy(ignore_if_missing):
            return False
        raise _error(f"File not found: {real}")
    re_flags = T.regex_flags(flags) | (re.MULTILINE if _truthy(multiline) else 0)
    return re.search(str(pattern).encode(), F.read_bytes(real), re_flags) is not None


@runs_command()
def replace(env: ModuleEnv, path: str, pattern: str, repl: Any, count: int = 0, flags: Any = 8, bufsize: Any = 1,
            append_if_not_found: bool = False, prepend_if_not_found: bool = False, not_found_content: Any = None,
            backup: Any = ".bak", dry_run: bool = False, search_only: bool = False, show_changes: bool = True,
            ignore_if_missing: bool = False, preserve_inode: bool = True,
            backslash_literal: bool = False) -> Any:
    """Replace the matches of a regex in a file; the diff (show_changes) or whether it changed
    (search_only: whether the pattern is found)."""
    real = os.path.realpath(os.path.expanduser(str(path)))
    if not os.path.isfile(real):
        if _truthy(ignore_if_missing):
            return False
        raise _error(f"File not found: {real}")
    old = F.read_bytes(real)
    if F.is_binary(old):
        raise _error(f"Cannot perform string replacements on a binary file: {real}")
    if _truthy(search_only):
        return re.search(str(pattern).encode(), old, T.regex_flags(flags)) is not None
    try:
        new = T.replace_content(old, pattern, repl, int(count), flags, _truthy(append_if_not_found),
                                _truthy(prepend_if_not_found), not_found_content, _truthy(backslash_literal))
    except T.EditError as exc:
        raise _error(str(exc)) from None
    if new != old and not _truthy(dry_run):
        _save(real, old, new, backup)
    return _edit_answer(old, new, show_changes)


@runs_command()
def line(env: ModuleEnv, path: str, content: Any = None, match: str | None = None, mode: str | None = None,
         location: str | None = None, before: str | None = None, after: str | None = None,
         show_changes: bool = True, backup: Any = False, quiet: bool = False, indent: bool = True) -> Any:
    """Insert, ensure, replace or delete one line (Salt's file.line); the diff, or False when
    nothing changed."""
    real, old = _text_file(path)
    try:
        new = T.line_content(old.decode("utf-8", errors="surrogateescape"), content, match, mode, location, before,
                             after, _truthy(indent)).encode("utf-8", errors="surrogateescape")
    except T.EditError as exc:
        raise _error(str(exc)) from None
    if new == old:
        return False
    _save(real, old, new, ".bak" if backup is True else backup)
    return _edit_answer(old, new, show_changes)


@runs_command()
def blockreplace(env: ModuleEnv, path: str, marker_start: str = "#-- start managed zone --",
                 marker_end: str = "#-- end managed zone --", content: str = "", append_if_not_found: bool = False,
                 prepend_if_not_found: bool = False, backup: Any = ".bak", dry_run: bool = False,
                 show_changes: bool = True, append_newline: bool = False, insert_before_match: str | None = None,
                 insert_after_match: str | None = None) -> Any:
    """Replace the lines between two marker lines with content; the diff ('' when unchanged)."""
    real, old = _text_file(path)
    try:
        new = T.blockreplace_content(old.decode("utf-8", errors="surrogateescape"), str(marker_start),
                                     str(marker_end), content, _truthy(append_if_not_found),
                                     _truthy(prepend_if_not_found), insert_before_match, insert_after_match,
                                     _truthy(append_newline)).encode("utf-8", errors="surrogateescape")
    except T.EditError as exc:
        raise _error(str(exc)) from None
    if new != old and not _truthy(dry_run):
        _save(real, old, new, backup)
    return _edit_answer(old, new, show_changes)


def _comment_lines(path: str, regex: str, char: str, comment: bool, backup: Any) -> Any:
    body = str(regex).lstrip("^").rstrip("$")
    end = "$" if str(regex).endswith("$") else ""
    if comment:
        line_re = re.compile(("^" if str(regex).startswith("^") else "") + f"({body}){end}")
    else:
        line_re = re.compile(rf"^{re.escape(char)}\s*({body}){end}")
    real, old = _text_file(path)
    if F.is_binary(old):
        raise _error(f"Cannot perform string replacements on a binary file: {real}")
    text = old.decode("utf-8", errors="surrogateescape")
    out: list[str] = []
    found = False
    for current in text.splitlines(True):
        if line_re.match(current):
            found = True
            current = f"{char}{current}" if comment else current.lstrip(char)
        out.append(current)
    if not found:
        return False
    new = "".join(out).encode("utf-8", errors="surrogateescape")
    if new != old:
        _save(real, old, new, backup)
    return F.unified_diff(F.split_lines(old), F.split_lines(new))


@runs_command()
def comment_line(env: ModuleEnv, path: str, regex: str, char: str = "#", cmnt: bool = True,
                 backup: Any = ".bak") -> Any:
    """Comment (cmnt=True) or uncomment the lines matching regex; the diff, or False when no line
    matched."""
    return _comment_lines(path, regex, char, _truthy(cmnt), backup)


@runs_command()
def comment(env: ModuleEnv, path: str, regex: str, char: str = "#", backup: Any = ".bak") -> Any:
    """Comment out the lines matching regex (file.comment_line with cmnt=True)."""
    return _comment_lines(path, regex, char, True, backup)


@runs_command()
def uncomment(env: ModuleEnv, path: str, regex: str, char: str = "#", backup: Any = ".bak") -> Any:
    """Uncomment the lines matching regex (file.comment_line with cmnt=False)."""
    return _comment_lines(path, regex, char, False, backup)
