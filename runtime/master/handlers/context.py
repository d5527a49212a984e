"""What the handlers of one MWorker process share: the master's stores, caches and sockets."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import zmq

from runtime import protocol, transport
from runtime.config import option
from runtime.crypt.channel import ServerChannel
from runtime.crypt.identity import Identity
from runtime.events import EventPusher
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.datacache import SQLiteDataCache
from runtime.master.heartbeats import PeriodForFleet
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
        heartbeat_s = option(opts, "heartbeat_period", float)
        auth = AuthService(identity, keys, sessions, AuthSettings(
            auto_accept=option(opts, "auto_accept", bool), heartbeat_s=heartbeat_s,
            heartbeat_period=PeriodForFleet(heartbeat_s, option(opts, "heartbeat_max_rate", float),
                                            sessions.session_count)))
        publish_sock = transport.make_socket(ctx, zmq.PUSH)
        publish_sock.connect(publish_address)
        return cls(opts=opts, identity=identity, keys=keys, sessions=sessions, auth=auth,
                   channel=ServerChannel(sessions), jobs=SQLiteJobCache(opts["cachedir"]),
                   data=SQLiteDataCache(opts["cachedir"], still_known=lambda m: bool(sessions.minion_sessions(m)),
                                        max_size=option(opts, "max_minion_data_size", int)),
                   events=EventPusher(ctx, opts["sock_dir"]),
                   publish_sock=publish_sock,
                   refusals=RateLimitedLog(log, option(opts, "refusal_log_interval", float)))

    def client_user(self, proof: protocol.ClientProof, body: bytes) -> str:
        """The local user whose client key made ``proof`` over ``body`` (each proof is accepted once);
        ``Refused`` (bad_proof, replayed) otherwise."""
        from runtime.crypt.clientkey import client_key_path, load_client_key, verify_proof
        from runtime.crypt.errors import KeyFileError

        user = proof.user
        try:
            key = load_client_key(client_key_path(self.opts["cachedir"], user))
        except (KeyFileError, ValueError):
            raise Refused("bad_proof", f"no client key for user {user!r}") from None
        verified_user, nonce = verify_proof(key, proof.to_wire(), body, not_before_ms=self.sessions.started_ms())
        if not self.sessions.claim_nonce("client", nonce, int(time.time() * 1000) + 300_000):
            raise Refused("replayed", "client request replayed")
        return verified_user

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
