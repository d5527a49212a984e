"""What the handlers of one MWorker process share: the master's stores, caches and sockets."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import zmq

from runtime import transport
from runtime.config import option
from runtime.crypt.channel import ServerChannel
from runtime.crypt.identity import Identity
from runtime.events import EventPusher
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.datacache import SQLiteDataCache
from runtime.master.jobcache import SQLiteJobCache
from runtime.master.keys import FileKeyStore
from runtime.master.sessions import SQLiteSessionStore
from runtime.ratelog import RateLimitedLog

log = logging.getLogger("saltpan.master.worker")


class Refused(Exception):
    """A request the master will not do: answered ``{"error": {"reason", "message"}}``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class WorkerContext:
    """One per worker process (not shared between processes: each opens its own connections)."""

    opts: dict[str, Any]
    identity: Identity
    keys: FileKeyStore
    sessions: SQLiteSessionStore
    auth: AuthService
    channel: ServerChannel
    jobs: SQLiteJobCache
    data: SQLiteDataCache
    events: EventPusher
    publish_sock: zmq.Socket
    refusals: RateLimitedLog
    master_user: str = field(default_factory=lambda: current_user())

    @classmethod
    def open(cls, opts: dict[str, Any], identity: Identity, ctx: zmq.Context, publish_address: str
             ) -> WorkerContext:
        keys = FileKeyStore(opts["pki_dir"], max_pending=option(opts, "max_pending_keys", int))
        sessions = SQLiteSessionStore.in_sock_dir(opts["sock_dir"])
        auth = AuthService(identity, keys, sessions, AuthSettings(
            auto_accept=option(opts, "auto_accept", bool), heartbeat_s=option(opts, "heartbeat_period", float)))
        publish_sock = transport.make_socket(ctx, zmq.PUSH)
        publish_sock.connect(publish_address)
        return cls(opts=opts, identity=identity, keys=keys, sessions=sessions, auth=auth,
                   channel=ServerChannel(sessions), jobs=SQLiteJobCache(opts["cachedir"]),
                   data=SQLiteDataCache(opts["cachedir"], still_known=lambda m: bool(sessions.minion_sessions(m)),
                                        max_size=option(opts, "max_minion_data_size", int)),
                   events=EventPusher(ctx, opts["sock_dir"]),
                   publish_sock=publish_sock,
                   refusals=RateLimitedLog(log, option(opts, "refusal_log_interval", float)))

    def close(self) -> None:
        for closer in (self.jobs.close, self.data.close, self.sessions.close, self.events.close):
            try:
                closer()
            except Exception:  # noqa: BLE001 - closing what is left after a failure
                pass
        self.publish_sock.close(linger=0)


def current_user() -> str:
    """The user the master runs as: its jobs are not restricted by publisher_acl."""
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())
