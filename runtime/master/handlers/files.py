"""The file server (``salt://``) for minions: ``fileserver_backend`` in order (file_roots, gitfs), paths
resolved beneath each backend's roots only (SECURITY.md class 4); and ``fileserver_update`` for the
master's user (Salt's ``salt-run fileserver.update``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from runtime import pipeline, protocol
from runtime.config import option
from runtime.master.fileserver import FileServer
from runtime.master.handlers.context import Refused, WorkerContext

log = logging.getLogger("saltpan.master.gitfs")


class FileHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.FileEnvs: "file_envs",       # sealed: the minion id comes from the session
        protocol.FileList: "file_list",
        protocol.DirList: "dir_list",
        protocol.FileFind: "file_find",
        protocol.FileHash: "file_hash",
        protocol.ServeFile: "serve_file",
        protocol.FileserverUpdate: "fileserver_update",   # the master's user, proving it holds its client key
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

    # -- local clients ----------------------------------------------------------------
    def fileserver_update(self, peer: str, request: protocol.FileserverUpdate) -> protocol.FileserverUpdateReply:
        """Fetch the git remotes of the requested backends now, in this worker (an administrator's request,
        never a minion's): each fetch holds its repository's lock, so the GitfsUpdate process and this
        request never fetch one repository twice at once.  A remote that fails keeps its last good
        revision and is reported in the reply and the master's log, naming it."""
        from runtime.gitfs import update as gitfs_update
        from runtime.gitfs.remotes import GIT_PILLAR, GITFS, GitConfigError

        user = self.ctx.client_user(request.proof, request.body)
        if user != self.ctx.master_user:
            raise Refused("acl", f"only the master's user ({self.ctx.master_user}) may update the file server")
        query = protocol.UpdateQuery.decode(request.body)
        try:
            chosen = gitfs_update.select_backends(self.ctx.opts, query.backends)
            roles = [role for role in (GITFS, GIT_PILLAR) if role in chosen]
            results = gitfs_update.update(self.ctx.opts, roles=roles, remotes=query.remotes) if roles else []
        except GitConfigError as exc:
            raise Refused("bad_backend", str(exc)) from None
        log.info("fileserver update (backends %s) asked by %s from %s", ", ".join(chosen) or "none", user, peer)
        gitfs_update.log_results(results, log)
        if GITFS in chosen and option(self.ctx.opts, "fileserver_events", bool):
            self.ctx.events.fire(gitfs_update.GITFS_UPDATE_TAG, gitfs_update.gitfs_event(results))
        remotes = tuple(protocol.RemoteUpdate(backend=r.remote.role, remote=r.remote.display_url, ok=r.ok,
                                              changed=r.changed, error=r.error, notes=list(r.notes))
                        for r in results)
        return protocol.FileserverUpdateReply(changed=any(r.changed for r in results), backends=chosen,
                                              remotes=remotes)
