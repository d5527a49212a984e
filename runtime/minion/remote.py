"""A minion's view of the master: remote files (a FileSource) and remote pillar.

``RemoteFiles`` implements the compiler's FileSource over the master's file
server with a local cache checked by hash, so sls files, Jinja imports and
``salt://`` sources on a minion resolve through the master (Salt's model).
Calls are synchronous: they run in job threads and hop onto the minion's
event loop to use its session.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import threading
from typing import TypeVar

from compiler.errors import ACCESS_DENIED, RENDER_ERROR, CompileError
from compiler.roots import FetchedFile, SourceFile, clean_relpath, valid_saltenv
from runtime import protocol
from runtime.private_files import ensure_private_dir
from runtime.protocol.session import Requester

R = TypeVar("R", bound=protocol.Reply)

_REFUSALS = {"access_denied", "bad_path", "bad_saltenv", "unknown_saltenv"}


class RemoteFiles:
    """FileSource backed by the master's file server, cached under cachedir/files/<saltenv>/."""

    def __init__(self, request: Requester, cachedir: str):
        self._request = request
        self.cache_root = os.path.join(cachedir, "files")
        self._lock = threading.Lock()
        self._envs: list[str] | None = None
        self._lists: dict[str, list[str]] = {}
        self._verified: dict[tuple[str, str], tuple[FetchedFile, str] | None] = {}

    def request(self, message: protocol.SessionRequest[R]) -> R:
        """One file server request; a refusal or a silent master becomes a CompileError that the
        compiler and the states report like any missing or refused file (no traceback)."""
        from runtime.crypt.errors import RemoteRefusal
        from runtime.modules import CommandError
        from runtime.transport import RequestTimeout

        what = f"{message.COMMAND} {getattr(message, 'path', getattr(message, 'saltenv', ''))!s}"[:200]
        try:
            return self._request(message)
        except RemoteRefusal as exc:
            kind = ACCESS_DENIED if exc.reason in _REFUSALS else RENDER_ERROR
            raise CompileError(kind, f"the master refused {what}: {exc}") from None
        except (RequestTimeout, CommandError, TimeoutError, concurrent.futures.TimeoutError) as exc:
            raise CompileError(RENDER_ERROR, f"the master's file server did not answer {what}: {exc}") from None

    def new_run(self) -> None:
        """Forget what was checked: the next run re-validates against the master (by hash)."""
        with self._lock:
            self._envs = None
            self._lists.clear()
            self._verified.clear()

    def saltenvs(self) -> list[str]:
        if self._envs is None:
            reply = self.request(protocol.FileEnvs())
            self._envs = [e for e in reply.envs if valid_saltenv(e)]
        return list(self._envs)

    def list_files(self, saltenv: str) -> list[str]:
        if saltenv not in self._lists:
            self._lists[saltenv] = list(self.request(protocol.FileList(saltenv=saltenv, prefix="")).files)
        return list(self._lists[saltenv])

    def _cache_path(self, saltenv: str, rel: str) -> str:
        return os.path.join(self.cache_root, saltenv, *rel.split("/"))

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        if not valid_saltenv(saltenv):
            return None
        rel = clean_relpath(relpath)
        key = (saltenv, rel)
        with self._lock:
            if key in self._verified:
                hit = self._verified[key]
                return hit[0] if hit else None
        found = self.request(protocol.FileFind(path=rel, saltenv=saltenv))
        if found.hsum is None:
            with self._lock:
                self._verified[key] = None
            return None
        hsum = found.hsum
        path = self._cache_path(saltenv, rel)
        data = _read_if_hash(path, hsum)
        if data is None:
            data = self._download(saltenv, rel, hsum)
            ensure_private_dir(os.path.dirname(path))
            tmp = f"{path}.part"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        fetched = FetchedFile(data, f"salt://{rel}?saltenv={saltenv}", found.mode)
        with self._lock:
            self._verified[key] = (fetched, hsum)
        return fetched

    def _download(self, saltenv: str, rel: str, hsum: str) -> bytes:
        chunks: list[bytes] = []
        loc = 0
        for _ in range(100000):
            reply = self.request(protocol.ServeFile(path=rel, saltenv=saltenv, loc=loc))
            if reply.data is None:
                raise CompileError(ACCESS_DENIED, f"salt://{rel} vanished from the master while downloading")
            chunks.append(reply.data)
            loc = reply.loc if reply.loc is not None else loc + len(reply.data)
            if reply.done:
                break
        blob = b"".join(chunks)
        if hsum and hashlib.sha256(blob).hexdigest() != hsum:
            raise CompileError(ACCESS_DENIED, f"salt://{rel}: downloaded content does not match the master's hash")
        return blob

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        fetched = self.fetch(saltenv, relpath)
        if fetched is None:
            return None
        return SourceFile(saltenv, clean_relpath(relpath), fetched.display,
                          fetched.data.decode("utf-8", errors="replace"))


def _read_if_hash(path: str, hsum: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == hsum else None
