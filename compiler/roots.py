"""File access to pillar_roots / file_roots, per saltenv.

``FileSource`` is the interface the compiler reads trees through; ``LocalRoots``
implements it over local directories.  A minion plugs in a remote source
(fetching from the master's file server) implementing the same three methods.

Every path handed in is a *relative* path inside the roots.  Absolute paths,
``..`` components, backslashes and NUL bytes are refused, and a file whose real
path (after following symlinks) leaves its root is refused too.  Reads never
happen outside the configured roots.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from typing import Protocol

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


class LocalRoots:
    """FileSource over local directories: {saltenv: [dir, ...]}.

    Contents are cached by (path, mtime, size) so that compiling many minions
    reads each file once while a changed file is still seen at once.
    """

    def __init__(self, roots: dict[str, list[str]]):
        self._roots = {env: [os.path.abspath(d) for d in dirs] for env, dirs in roots.items()}
        self._real = {env: [os.path.realpath(d) for d in dirs] for env, dirs in self._roots.items()}
        self._cache: dict[str, tuple[int, int, SourceFile]] = {}

    def saltenvs(self) -> list[str]:
        return list(self._roots)

    def root_dirs(self, saltenv: str) -> list[str]:
        return list(self._roots.get(saltenv, []))

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        if not valid_saltenv(saltenv) or saltenv not in self._roots:
            return None
        rel = clean_relpath(relpath)
        for root, real_root in zip(self._roots[saltenv], self._real[saltenv], strict=True):
            path = os.path.join(root, rel)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # what os.path.isfile checks, without a second stat
                continue
            cached = self._cache.get(path)
            if cached and cached[0] == st.st_mtime_ns and cached[1] == st.st_size:
                return cached[2]
            real = os.path.realpath(path)
            if not (real == real_root or real.startswith(real_root.rstrip("/") + "/")):
                raise CompileError(ACCESS_DENIED, f"{path} resolves outside the roots")
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            found = SourceFile(saltenv, rel, path, text)
            self._cache[path] = (st.st_mtime_ns, st.st_size, found)
            return found
        return None

    def _locate(self, saltenv: str, relpath: str) -> str | None:
        if not valid_saltenv(saltenv) or saltenv not in self._roots:
            return None
        rel = clean_relpath(relpath)
        for root, real_root in zip(self._roots[saltenv], self._real[saltenv], strict=True):
            path = os.path.join(root, rel)
            if not os.path.isfile(path):
                continue
            real = os.path.realpath(path)
            if not (real == real_root or real.startswith(real_root.rstrip("/") + "/")):
                raise CompileError(ACCESS_DENIED, f"{path} resolves outside the roots")
            return path
        return None

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        path = self._locate(saltenv, relpath)
        if path is None:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
        return FetchedFile(data, path, os.stat(path).st_mode & 0o7777)

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
