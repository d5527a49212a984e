"""File access to pillar_roots / file_roots, per saltenv.

``FileSource`` is the interface the compiler reads trees through; ``LocalRoots``
implements it over local directories.  A minion plugs in a remote source
(fetching from the master's file server) implementing the same three methods.

Every path handed in is a *relative* path inside the roots.  Absolute paths,
``..`` components, backslashes and NUL bytes are refused, and a file whose path
(through symlinks) leaves its root is refused too.  Files are opened once,
component by component from the root (``compiler.beneath``), and read from that
descriptor: a symlink swapped between a check and a read cannot send a read
outside the configured roots.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from typing import Protocol

from compiler.beneath import open_beneath
from compiler.errors import ACCESS_DENIED, CompileError


@dataclass(frozen=True)
class SourceFile:
    """A file found in the roots."""

    saltenv: str
    relpath: str  # '/'-separated, relative to the root it was found in
    display: str  # what users see in error messages (a real path or salt:// URL)
    text: str


@dataclass(frozen=True)
class FetchedFile:
    """A file's raw bytes (for file.managed sources), with its display name and mode bits."""

    data: bytes
    display: str
    mode: int | None


class FileSource(Protocol):
    """Where the compiler reads sls files, top files and Jinja imports from."""

    def saltenvs(self) -> list[str]:
        """The environments, in configuration order."""
        ...

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        """The file at relpath in saltenv, or None when no root has it."""
        ...

    def list_files(self, saltenv: str) -> list[str]:
        """Every file of saltenv as relative '/'-separated paths."""
        ...

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        """Raw bytes of a file (salt:// sources), or None when no root has it."""
        ...


def clean_relpath(relpath: str) -> str:
    """Normalise a relative path inside the roots, refusing escapes.

    Raises CompileError(kind=access_denied) for absolute paths, '..' parts,
    backslashes and NUL bytes.
    """
    if not isinstance(relpath, str) or not relpath:
        raise CompileError(ACCESS_DENIED, f"invalid path {relpath!r}")
    if "\x00" in relpath or "\\" in relpath:
        raise CompileError(ACCESS_DENIED, f"path {relpath!r} contains a forbidden character")
    if relpath.startswith("/"):
        raise CompileError(ACCESS_DENIED, f"absolute path {relpath!r} is outside the roots")
    parts = [p for p in relpath.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise CompileError(ACCESS_DENIED, f"path {relpath!r} leads outside the roots")
    if not parts:
        raise CompileError(ACCESS_DENIED, f"invalid path {relpath!r}")
    return "/".join(parts)


def valid_saltenv(saltenv: str) -> bool:
    return (
        isinstance(saltenv, str)
        and bool(saltenv)
        and "/" not in saltenv
        and "\\" not in saltenv
        and "\x00" not in saltenv
        and saltenv not in (".", "..")
    )


def join_relative(base_relpath: str, ref: str) -> str:
    """Resolve ref ('./x', '../x') against the directory of base_relpath."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base_relpath), ref))
    if joined.startswith("../") or joined == "..":
        raise CompileError(ACCESS_DENIED, f"path {ref!r} leads outside the roots")
    return joined


class OpenedFile:
    """A file of the roots, opened once (``LocalRoots.open``): read it through this object, which
    holds the descriptor that was checked, never by its name again.  A context manager."""

    def __init__(self, fd: int, path: str):
        self.fd = fd
        self.path = path                  # what users see: the root joined with the relative path
        self.stat = os.fstat(fd)

    @property
    def identity(self) -> tuple[int, int, int, int]:
        """(device, inode, mtime, size): the same file, unchanged, while this stays the same."""
        st = self.stat
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def read_all(self) -> bytes:
        chunks = []
        offset = 0
        while chunk := os.pread(self.fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


class LocalRoots:
    """FileSource over local directories: {saltenv: [dir, ...]}.

    Contents are cached by path with the identity (device, inode, mtime, size) of the file they
    were read from through a checked descriptor, so that compiling many minions reads each file
    once (one ``stat`` per later request) while a changed or swapped file is read again.
    """

    def __init__(self, roots: dict[str, list[str]]):
        self._roots = {env: [os.path.abspath(d) for d in dirs] for env, dirs in roots.items()}
        self._cache: dict[str, tuple[tuple[int, int, int, int], SourceFile]] = {}

    def saltenvs(self) -> list[str]:
        return list(self._roots)

    def root_dirs(self, saltenv: str) -> list[str]:
        return list(self._roots.get(saltenv, []))

    def open(self, saltenv: str, relpath: str) -> OpenedFile | None:
        """The first root's regular file at ``relpath``, opened beneath its root (None when no
        root has one); ``CompileError`` (access_denied) when the path leads out of its root."""
        if not valid_saltenv(saltenv) or saltenv not in self._roots:
            return None
        rel = clean_relpath(relpath)
        for root in self._roots[saltenv]:
            path = os.path.join(root, rel)
            try:
                fd = open_beneath(root, rel, display=path)
            except FileNotFoundError:
                continue
            except OSError:          # unreadable (permissions): as a missing file, like before
                continue
            return OpenedFile(fd, path)
        return None

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        if not valid_saltenv(saltenv) or saltenv not in self._roots:
            return None
        rel = clean_relpath(relpath)
        for root in self._roots[saltenv]:   # the fast path: the first root's file, unchanged since read safely
            path = os.path.join(root, rel)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            cached = self._cache.get(path)
            if cached is not None and cached[0] == _identity(st):
                return cached[1]
            break
        opened = self.open(saltenv, rel)
        if opened is None:
            return None
        with opened:
            text = opened.read_all().decode("utf-8", errors="replace")
        found = SourceFile(saltenv, rel, opened.path, text)
        self._cache[opened.path] = (opened.identity, found)
        return found

    def exists(self, saltenv: str, relpath: str) -> bool:
        """Whether ``relpath`` is a regular file inside the roots (``CompileError`` when it leads out)."""
        opened = self.open(saltenv, relpath)
        if opened is None:
            return False
        opened.close()
        return True

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        opened = self.open(saltenv, relpath)
        if opened is None:
            return None
        with opened:
            return FetchedFile(opened.read_all(), opened.path, opened.stat.st_mode & 0o7777)

    def list_files(self, saltenv: str) -> list[str]:
        out: set[str] = set()
        for root in self._roots.get(saltenv, []):
            for cur, dirs, files in os.walk(root):
                dirs.sort()
                for name in files:
                    full = os.path.join(cur, name)
                    out.add(os.path.relpath(full, root).replace(os.sep, "/"))
        return sorted(out)


def sls_candidates(sls: str) -> list[str]:
    """Relative paths an sls name may live at: a.b -> a/b.sls, a/b/init.sls."""
    base = sls.replace(".", "/")
    return [base + ".sls", base + "/init.sls"]


def find_sls(source: FileSource, saltenv: str, sls: str) -> SourceFile | None:
    """Find the file for an sls name; None when it does not exist."""
    if not sls or sls.startswith(".") or ".." in sls or "/" in sls or "\\" in sls:
        return None
    for cand in sls_candidates(sls):
        found = source.get(saltenv, cand)
        if found is not None:
            return found
    return None
