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
from runtime.master.changes import ChangeLog
from runtime.master.datacache import DataCache
from runtime.master.jobcache import JobCache
from runtime.master.keys import KeyStore
from runtime.master.sessions import SessionStore
from runtime.master.spool import ReturnSpool
from runtime.master.store.factory import MasterStores, open_master_stores
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
    keys: KeyStore
    sessions: SessionStore
    auth: AuthService
    channel: ServerChannel
    jobs: JobCache
    data: DataCache
    changes: ChangeLog
    spool: ReturnSpool
    events: EventPusher
    publish_sock: zmq.Socket
    refusals: RateLimitedLog
    master_user: str = field(default_factory=lambda: current_user())

    @classmethod
    def open(cls, opts: dict[str, Any], identity: Identity, ctx: zmq.Context, publish_address: str
             ) -> WorkerContext:
        stores = open_master_stores(opts)
        auth = AuthService(identity, stores.keys, stores.sessions, AuthSettings(
            auto_accept=option(opts, "auto_accept", bool), heartbeat_s=option(opts, "heartbeat_period", float)))
        publish_sock = transport.make_socket(ctx, zmq.PUSH)
        publish_sock.connect(publish_address)
        return cls(opts=opts, identity=identity, keys=stores.keys, sessions=stores.sessions, auth=auth,
                   channel=ServerChannel(stores.sessions), jobs=stores.jobs, data=stores.data, changes=stores.changes,
                   spool=stores.spool,
                   events=EventPusher(ctx, opts["sock_dir"]),
                   publish_sock=publish_sock,
                   refusals=RateLimitedLog(log, option(opts, "refusal_log_interval", float)))

    def close(self) -> None:
        MasterStores(self.keys, self.sessions, self.jobs, self.data, self.changes, self.spool).close()
        try:
            self.events.close()
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
