"""The file server (``salt://``) for minions: ``fileserver_backend`` in order (file_roots, gitfs), paths
resolved beneath each backend's roots only (SECURITY.md class 4)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from runtime import pipeline, protocol
from runtime.config import option
from runtime.master.fileserver import FileServer
from runtime.master.handlers.context import WorkerContext


class FileHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.FileEnvs: "file_envs",       # sealed: the minion id comes from the session
        protocol.FileList: "file_list",
        protocol.DirList: "dir_list",
        protocol.FileFind: "file_find",
        protocol.FileHash: "file_hash",
        protocol.ServeFile: "serve_file",
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset({"files"})

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self._files: FileServer | None = None

    def files(self) -> FileServer:
        """The file server over ``pipeline.file_source`` (the master checked its configuration at
        start), made at the first request; gitfs is read from the clones the master fetches."""
        if self._files is None:
            self._files = FileServer(pipeline.file_source(self.ctx.opts),
                                     option(self.ctx.opts, "refusal_log_interval", float))
        return self._files

    def file_envs(self, minion_id: str, request: protocol.FileEnvs) -> protocol.FileEnvsReply:
        return protocol.FileEnvsReply(envs=self.files().envs())

    def file_list(self, minion_id: str, request: protocol.FileList) -> protocol.FileListReply:
        return protocol.FileListReply(files=self.files().file_list(request.saltenv, request.prefix))

    def dir_list(self, minion_id: str, request: protocol.DirList) -> protocol.DirListReply:
        return protocol.DirListReply(dirs=self.files().dir_list(request.saltenv, request.prefix))

    def file_find(self, minion_id: str, request: protocol.FileFind) -> protocol.FileFindReply:
        return protocol.FileFindReply(**self.files().find(request.path, request.saltenv))

    def file_hash(self, minion_id: str, request: protocol.FileHash) -> protocol.FileHashReply:
        return protocol.FileHashReply(**self.files().hash(request.path, request.saltenv))

    def serve_file(self, minion_id: str, request: protocol.ServeFile) -> protocol.FileChunk:
        return protocol.FileChunk(**self.files().serve(request.path, request.saltenv, request.loc))
