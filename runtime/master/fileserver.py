"""The master's file server over file_roots (salt:// for minions).

Every path is relative to a root of one saltenv: absolute paths, ``..``,
backslashes, NUL, bad saltenv names and symlinks leading out of the root are
refused (SECURITY.md class 4).  Each request opens its file once, beneath its root
(``compiler.beneath``), and reads the chunk and the hash from that descriptor, so a
symlink swapped mid-request cannot serve a file from outside.  Files are served in
chunks with a SHA-256 the minion checks; hashes are cached by (device, inode, mtime,
size).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from compiler.errors import CompileError
from compiler.roots import LocalRoots, OpenedFile, clean_relpath, valid_saltenv
from runtime.ratelog import RateLimitedLog

CHUNK = 1024 * 1024

log = logging.getLogger("saltpan.master.fileserver")


class FileServerError(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class FileServer:
    def __init__(self, file_roots: dict[str, list[str]], refusal_log_interval: float = 60.0):
        self.roots = LocalRoots(file_roots)
        self._hashes: dict[tuple[int, int, int, int], str] = {}
        self.refusals = RateLimitedLog(log, refusal_log_interval)

    def envs(self) -> list[str]:
        return self.roots.saltenvs()

    def _env(self, saltenv: Any) -> str:
        if saltenv is not None and not isinstance(saltenv, str):
            raise FileServerError("bad_saltenv", "saltenv must be a string")
        env = saltenv or "base"
        if not valid_saltenv(env):
            raise FileServerError("bad_saltenv", f"invalid saltenv {str(env)[:64]!r}")
        if env not in self.roots.saltenvs():
            raise FileServerError("unknown_saltenv", f"no file_roots for saltenv {env!r}")
        return env

    def _open(self, path: Any, saltenv: Any) -> tuple[str, str, OpenedFile | None]:
        """(saltenv, relative path, the file opened beneath its root or None when missing).
        Everything served is read from that descriptor: what was checked is what is sent."""
        env = self._env(saltenv)
        if not isinstance(path, str):
            raise FileServerError("bad_path", "path must be a string")
        rel = path[len("salt://"):] if path.startswith("salt://") else path
        try:
            rel = clean_relpath(rel)
            opened = self.roots.open(env, rel)
        except CompileError as exc:
            # The detail (the master's own paths) goes to the master's log, not to the minion.
            # one line per saltenv and interval: a peer sending many distinct paths cannot flood the log
            self.refusals.warning(f"path:{env}", "file server: refused %r in saltenv %s: %s",
                                  path[:200], env, exc.message)
            raise FileServerError("access_denied", f"path {path[:200]!r} is refused: not inside file_roots of "
                                                   f"saltenv {env!r}") from None
        return env, rel, opened

    def _hash(self, opened: OpenedFile) -> str:
        """SHA-256 of the opened file, cached by (device, inode, mtime, size)."""
        key = opened.identity
        cached = self._hashes.get(key)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        offset = 0
        while block := opened.pread(CHUNK, offset):
            digest.update(block)
            offset += len(block)
        value = digest.hexdigest()
        if len(self._hashes) > 10000:
            self._hashes.clear()
        self._hashes[key] = value
        return value

    def find(self, path: Any, saltenv: Any) -> dict[str, Any]:
        env, rel, opened = self._open(path, saltenv)
        if opened is None:
            return {}
        with opened:
            return {"path": rel, "saltenv": env, "hsum": self._hash(opened), "hash_type": "sha256",
                    "size": opened.stat.st_size, "mode": opened.stat.st_mode & 0o7777}

    def hash(self, path: Any, saltenv: Any) -> dict[str, Any]:
        _env, _rel, opened = self._open(path, saltenv)
        if opened is None:
            return {}
        with opened:
            return {"hsum": self._hash(opened), "hash_type": "sha256"}

    def serve(self, path: Any, saltenv: Any, loc: Any = 0) -> dict[str, Any]:
        _env, rel, opened = self._open(path, saltenv)
        if opened is None:
            return {}
        with opened:
            size = opened.stat.st_size
            if not isinstance(loc, int) or isinstance(loc, bool) or not 0 <= loc <= size:
                raise FileServerError("bad_path", "loc must be an offset within the file")
            data = opened.pread(CHUNK, loc)
            end = loc + len(data)
            return {"data": data, "dest": rel, "loc": end, "done": end >= size, "hsum": self._hash(opened),
                    "hash_type": "sha256", "mode": opened.stat.st_mode & 0o7777, "size": size}

    def file_list(self, saltenv: Any, prefix: Any = "") -> list[str]:
        env = self._env(saltenv)
        prefix = prefix if isinstance(prefix, str) else ""
        out = []
        for rel in self.roots.list_files(env):
            if not rel.startswith(prefix):
                continue
            try:
                if self.roots.exists(env, rel):
                    out.append(rel)
            except CompileError:
                continue  # a symlink out of the root: never listed
        return out

    def dir_list(self, saltenv: Any, prefix: Any = "") -> list[str]:
        dirs = set()
        for rel in self.file_list(saltenv, prefix):
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        return sorted(dirs)
