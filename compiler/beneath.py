"""Open a file beneath a root directory without ever letting the kernel follow a symlink.

Checking a path (``realpath`` inside the root?) and then opening it by name is a race: between
the two, whoever can write inside the roots swaps a symlink and the open lands outside them (an
attack suite read 474 of 718 chunks of a file outside file_roots that way).  Here every
component is resolved from a descriptor of the directory before it (``openat`` with
``O_NOFOLLOW``); a symlink is read with ``readlinkat`` and its target resolved the same way, and
only while it stays beneath the root; the caller then reads from the descriptor it was given,
never from the name again.  What was opened is what was checked.

Symlinks that stay inside the root keep working (relative ones, and absolute ones naming a path
under the root as configured or as resolved), as Salt follows them.
"""

from __future__ import annotations

import errno
import os
import stat

from compiler.errors import ACCESS_DENIED, CompileError

MAX_STEPS = 64          # symlinks followed (and components re-read after a swap) per open
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _outside(display: str) -> CompileError:
    return CompileError(ACCESS_DENIED, f"{display} resolves outside the roots")


def _under(target: str, prefixes: tuple[str, ...]) -> list[str] | None:
    """The components of absolute ``target`` below one of ``prefixes`` (the root), else None."""
    for prefix in prefixes:
        base = prefix.rstrip("/") or "/"
        if target == base or target.startswith(base.rstrip("/") + "/"):
            return [p for p in target[len(base):].split("/") if p]
    return None


def open_beneath(root: str, relpath: str, *, display: str | None = None) -> int:
    """A read-only descriptor of the regular file ``relpath`` ('/'-separated, already cleaned)
    beneath ``root``.

    Raises ``FileNotFoundError`` when there is no regular file there (missing, a directory, a
    FIFO or device, a dangling link) and ``CompileError`` (``access_denied``, naming
    ``display``) when the path, through symlinks, leads outside the root.  The caller owns the
    descriptor."""
    display = display or os.path.join(root, relpath)
    prefixes = (os.path.abspath(root), os.path.realpath(root))
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except NotADirectoryError:
        raise FileNotFoundError(errno.ENOENT, "root is not a directory", display) from None
    stack = [root_fd]                     # descriptors of the directories from the root down
    todo = list(reversed(relpath.split("/")))
    steps = 0
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if len(stack) == 1:
                    raise _outside(display)
                os.close(stack.pop())
                continue
            steps += 1
            if steps > MAX_STEPS + len(relpath.split("/")):
                raise CompileError(ACCESS_DENIED, f"{display}: too many symlinks (or it keeps changing)")
            here = stack[-1]
            try:
                st = os.stat(name, dir_fd=here, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                raise FileNotFoundError(errno.ENOENT, "no such file", display) from None
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=here)
                except OSError:           # replaced since: look at it again
                    todo.append(name)
                    continue
                if target.startswith("/"):
                    below = _under(os.path.normpath(target), prefixes)
                    if below is None:
                        raise _outside(display)
                    while len(stack) > 1:
                        os.close(stack.pop())
                    todo.extend(reversed(below))
                else:
                    todo.extend(reversed(target.split("/")))
                continue
            if not todo:                  # the last component: the file itself
                if not stat.S_ISREG(st.st_mode):
                    raise FileNotFoundError(errno.ENOENT, "not a regular file", display)
                try:
                    fd = os.open(name, _FILE_FLAGS, dir_fd=here)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:   # became a symlink since the stat: again
                        todo.append(name)
                        continue
                    raise FileNotFoundError(errno.ENOENT, "no such file", display) from None
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    raise FileNotFoundError(errno.ENOENT, "not a regular file", display)
                return fd
            if not stat.S_ISDIR(st.st_mode):
                raise FileNotFoundError(errno.ENOENT, "not a directory", display)
            try:
                stack.append(os.open(name, _DIR_FLAGS, dir_fd=here))
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):   # swapped for a link or a file: again
                    todo.append(name)
                    continue
                raise FileNotFoundError(errno.ENOENT, "no such directory", display) from None
        raise FileNotFoundError(errno.ENOENT, "not a file", display)
    finally:
        for fd in stack:
            os.close(fd)
