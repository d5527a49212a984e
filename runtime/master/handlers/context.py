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
from runtime.master.changes import ChangeLog
from runtime.master.datacache import DataCache
from runtime.master.heartbeats import PeriodForFleet
from runtime.master.jobcache import JobCache
from runtime.master.keys import KeyStore
from runtime.master.sessions import SessionStore
from runtime.master.spool import ReturnSpool
from runtime.master.store.factory import MasterStores, master_id, open_master_stores
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
    master_id: str = ""      # this master among those sharing the store (runtime.master.store.factory.master_id)

    @classmethod
    def open(cls, opts: dict[str, Any], identity: Identity, ctx: zmq.Context, publish_address: str
             ) -> WorkerContext:
        stores = open_master_stores(opts)
        heartbeat_s = option(opts, "heartbeat_period", float)
        auth = AuthService(identity, stores.keys, stores.sessions, AuthSettings(
            auto_accept=option(opts, "auto_accept", bool), heartbeat_s=heartbeat_s,
            heartbeat_period=PeriodForFleet(heartbeat_s, option(opts, "heartbeat_max_rate", float),
                                            stores.sessions.session_count)))
        publish_sock = transport.make_socket(ctx, zmq.PUSH)
        publish_sock.connect(publish_address)
        return cls(opts=opts, identity=identity, keys=stores.keys, sessions=stores.sessions, auth=auth,
                   channel=ServerChannel(stores.sessions), jobs=stores.jobs, data=stores.data, changes=stores.changes,
                   spool=stores.spool,
                   events=EventPusher(ctx, opts["sock_dir"]),
                   publish_sock=publish_sock,
                   refusals=RateLimitedLog(log, option(opts, "refusal_log_interval", float)),
                   master_id=master_id(opts))

    def client_user(self, proof: protocol.ClientProof, body: bytes) -> str:
        """The local user whose client key made ``proof`` over ``body`` (each proof is accepted once);
        ``Refused`` (bad_proof, replayed) otherwise."""
        from runtime.crypt.clientkey import client_key_path, load_client_key, verify_proof
        from runtime.crypt.errors import KeyFileError

        user = proof.user
        try:
            key = load_client_key(client_key_path(self.opts["cachedir"], user))
        except (KeyFileError, ValueError):
            # the same answer as a wrong MAC: a peer cannot learn which users hold a client key
            raise Refused("bad_proof", f"client proof for user {user[:64]!r} does not verify") from None
        verified_user, nonce = verify_proof(key, proof.to_wire(), body, not_before_ms=self.sessions.started_ms())
        if not self.sessions.claim_nonce("client", nonce, int(time.time() * 1000) + 300_000):
            raise Refused("replayed", "client request replayed")
        return verified_user

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
