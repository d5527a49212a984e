"""The master's file server (salt:// for minions) over ``fileserver_backend``: file_roots and gitfs.

The backends are ``pipeline.file_source(opts)``'s, in the configured order: the first backend
that has a file serves it, and the saltenvs are the union of the backends' (Salt's Fileserver).

Every path is relative to a root of one saltenv: absolute paths, ``..``,
backslashes, NUL and bad saltenv names are refused (SECURITY.md class 4), whatever the backend.

* ``roots``: each request opens its file once, beneath its root (``compiler.beneath``), and
  reads the chunk and the hash from that descriptor, so a symlink swapped mid-request cannot
  serve a file from outside; a symlink leading out of the root is refused.
* ``gitfs``: the file is the blob of the commit being served, read from the object store of the
  cached clone (``runtime.gitfs.source``): there is no path to race.  Only what lies under the
  remote's mountpoint and beneath its root is served; a symlink leading out of the root serves
  nothing.  A fetch that lands between two chunk requests of one download changes the hash the
  minion checks, so the minion never keeps a mix of two revisions.

Files are served in chunks with a SHA-256 the minion checks; hashes are cached by the file's
identity ((device, inode, mtime, size) on disk, the blob id in git).  Nothing here fetches:
the master's GitfsUpdate process does (``runtime.master.gitfs_updater``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

from compiler.errors import CompileError
from compiler.roots import FileSource, LocalRoots, OpenedFile, clean_relpath, valid_saltenv
from runtime.ratelog import RateLimitedLog

if TYPE_CHECKING:
    from runtime.gitfs.source import GitfsSource

CHUNK = 1024 * 1024
HASH_CACHE_SIZE = 10_000

log = logging.getLogger("saltpan.master.fileserver")


class FileServerError(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class ServedFile(Protocol):
    """A file found by a backend, read only through this object until it is closed."""

    @property
    def identity(self) -> Hashable: ...

    @property
    def size(self) -> int: ...

    @property
    def mode(self) -> int: ...

    def pread(self, size: int, offset: int) -> bytes: ...

    def close(self) -> None: ...


class RootFile:
    """A file of file_roots, opened beneath its root (the descriptor that was checked)."""

    def __init__(self, opened: OpenedFile):
        self.opened = opened

    @property
    def identity(self) -> Hashable:
        return self.opened.identity

    @property
    def size(self) -> int:
        return self.opened.stat.st_size

    @property
    def mode(self) -> int:
        return self.opened.stat.st_mode & 0o7777

    def pread(self, size: int, offset: int) -> bytes:
        return self.opened.pread(size, offset)

    def close(self) -> None:
        self.opened.close()


def backends_of(source: FileSource) -> list[LocalRoots | GitfsSource]:
    """The backends of ``pipeline.file_source(opts)``, in ``fileserver_backend`` order."""
    if isinstance(source, LocalRoots):
        return [source]
    from runtime.gitfs.source import BackendChain, GitfsSource

    parts = source.backends if isinstance(source, BackendChain) else [source]
    out: list[LocalRoots | GitfsSource] = []
    for part in parts:
        if not isinstance(part, (LocalRoots, GitfsSource)):
            raise TypeError(f"the file server cannot serve a {type(part).__name__}")
        out.append(part)
    return out


class FileServer:
    def __init__(self, source: FileSource, refusal_log_interval: float = 60.0):
        self.backends = backends_of(source)
        self.source = source
        self._hashes: dict[Hashable, str] = {}
        self.refusals = RateLimitedLog(log, refusal_log_interval)

    def envs(self) -> list[str]:
        envs = self.source.saltenvs()
        self._report_problems()
        return envs

    def _report_problems(self) -> None:
        """Log, once per interval and remote, why a gitfs remote serves nothing (never fetched, damaged
        clone): the minions see only that its files are missing."""
        for backend in self.backends:
            if not isinstance(backend, LocalRoots):
                for problem in backend.problems():
                    self.refusals.error(f"gitfs:{problem[:300]}", "file server: %s", problem)

    def _serves(self, backend: LocalRoots | GitfsSource, env: str) -> bool:
        if isinstance(backend, LocalRoots):
            return env in backend.saltenvs()
        return backend.serves(env)

    def _env(self, saltenv: Any) -> str:
        if saltenv is not None and not isinstance(saltenv, str):
            raise FileServerError("bad_saltenv", "saltenv must be a string")
        env = saltenv or "base"
        if not valid_saltenv(env):
            raise FileServerError("bad_saltenv", f"invalid saltenv {str(env)[:64]!r}")
        if not any(self._serves(backend, env) for backend in self.backends):
            raise FileServerError("unknown_saltenv", f"the master's file server has no saltenv {env!r}")
        return env

    def _open(self, path: Any, saltenv: Any) -> tuple[str, str, ServedFile | None]:
        """(saltenv, relative path, the file as the first backend that has it serves it, or None).
        Everything served is read from that object: what was checked is what is sent."""
        env = self._env(saltenv)
        if not isinstance(path, str):
            raise FileServerError("bad_path", "path must be a string")
        rel = path[len("salt://"):] if path.startswith("salt://") else path
        try:
            rel = clean_relpath(rel)
            for backend in self.backends:
                if not self._serves(backend, env):
                    continue
                if isinstance(backend, LocalRoots):
                    opened = backend.open(env, rel)
                    if opened is not None:
                        return env, rel, RootFile(opened)
                else:
                    blob = backend.open(env, rel)
                    if blob is not None:
                        return env, rel, blob
        except CompileError as exc:
            # The detail (the master's own paths) goes to the master's log, not to the minion.
            # one line per saltenv and interval: a peer sending many distinct paths cannot flood the log
            self.refusals.warning(f"path:{env}", "file server: refused %r in saltenv %s: %s",
                                  path[:200], env, exc.message)
            raise FileServerError("access_denied", f"path {path[:200]!r} is refused: not inside the file "
                                                   f"server's roots of saltenv {env!r}") from None
        return env, rel, None

    def _hash(self, served: ServedFile) -> str:
        """SHA-256 of the served file, cached by its identity."""
        key = served.identity
        cached = self._hashes.get(key)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        offset = 0
        while block := served.pread(CHUNK, offset):
            digest.update(block)
            offset += len(block)
        value = digest.hexdigest()
        if len(self._hashes) > HASH_CACHE_SIZE:
            self._hashes.clear()
        self._hashes[key] = value
        return value

    def find(self, path: Any, saltenv: Any) -> dict[str, Any]:
        env, rel, served = self._open(path, saltenv)
        if served is None:
            return {}
        try:
            return {"path": rel, "saltenv": env, "hsum": self._hash(served), "hash_type": "sha256",
                    "size": served.size, "mode": served.mode}
        finally:
            served.close()

    def hash(self, path: Any, saltenv: Any) -> dict[str, Any]:
        _env, _rel, served = self._open(path, saltenv)
        if served is None:
            return {}
        try:
            return {"hsum": self._hash(served), "hash_type": "sha256"}
        finally:
            served.close()

    def serve(self, path: Any, saltenv: Any, loc: Any = 0) -> dict[str, Any]:
        _env, rel, served = self._open(path, saltenv)
        if served is None:
            return {}
        try:
            size = served.size
            if not isinstance(loc, int) or isinstance(loc, bool) or not 0 <= loc <= size:
                raise FileServerError("bad_path", "loc must be an offset within the file")
            data = served.pread(CHUNK, loc)
            end = loc + len(data)
            return {"data": data, "dest": rel, "loc": end, "done": end >= size, "hsum": self._hash(served),
                    "hash_type": "sha256", "mode": served.mode, "size": size}
        finally:
            served.close()

    def file_list(self, saltenv: Any, prefix: Any = "") -> list[str]:
        env = self._env(saltenv)
        prefix = prefix if isinstance(prefix, str) else ""
        out: set[str] = set()
        for backend in self.backends:
            if not self._serves(backend, env):
                continue
            if not isinstance(backend, LocalRoots):
                # gitfs lists only files beneath each remote's root (links out of it are left out)
                out.update(rel for rel in backend.list_files(env) if rel.startswith(prefix))
                continue
            for rel in backend.list_files(env):
                if not rel.startswith(prefix) or rel in out:
                    continue
                try:
                    if backend.exists(env, rel):
                        out.add(rel)
                except CompileError:
                    continue  # a symlink out of the root: never listed
        return sorted(out)

    def dir_list(self, saltenv: Any, prefix: Any = "") -> list[str]:
        dirs = set()
        for rel in self.file_list(saltenv, prefix):
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        return sorted(dirs)
