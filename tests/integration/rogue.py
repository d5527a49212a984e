"""A hand-driven minion for attack and protocol tests: real keys, real sessions, any payload.

It speaks the wire protocol with runtime.crypt directly (no minion daemon), so a
test can send loads a well-behaved minion never would (another minion's id,
replays, forged files) and sniff publications.
"""

from __future__ import annotations

from typing import Any

import zmq

from runtime import codec, transport
from runtime.crypt.channel import ClientChannel
from runtime.crypt.handshake import AuthResult, finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublicationReceiver, PublishKey


class AcceptAll:
    """MasterTrust stand-in: a rogue trusts whatever master answers (tests only)."""

    def check(self, master_pub: bytes) -> None:
        return None

    def remember(self, master_pub: bytes) -> None:
        return None


class Rogue:
    def __init__(self, minion_id: str, ret_port: int, publish_port: int, identity: Identity | None = None):
        self.id = minion_id
        self.identity = identity or Identity.generate()
        self.ret_address = transport.tcp_address("127.0.0.1", ret_port)
        self.pub_address = transport.tcp_address("127.0.0.1", publish_port)
        self.client = transport.RequestClient(self.ret_address, timeout=3.0, tries=1)
        self.result: AuthResult | None = None
        self.channel: ClientChannel | None = None

    def auth(self) -> AuthResult:
        attempt = start_auth(self.identity, self.id)
        reply = self.client.request(codec.pack_envelope(codec.ENC_CLEAR, attempt.load))
        self.result = finish_auth(attempt, codec.unpack_envelope(reply).load, AcceptAll())
        if self.result.outcome == "accepted":
            self.channel = ClientChannel(self.result.session, clock_offset_ms=self.result.clock_offset_ms)
        return self.result

    def sealed(self, payload: dict[str, Any], heartbeat: bool = False) -> tuple[int, bytes]:
        assert self.channel is not None, "authenticate first"
        return self.channel.seal_request(payload, heartbeat=heartbeat)

    def send_raw(self, body: bytes) -> bytes:
        return self.client.request(body)

    def request(self, payload: dict[str, Any], heartbeat: bool = False) -> Any:
        """Seal (``heartbeat``: with a heartbeat's mark), send, open the reply (raises
        RemoteRefusal on a clear error)."""
        counter, body = self.sealed(payload, heartbeat)
        return self.channel.open_reply(counter, self.send_raw(body))

    def publish_key(self) -> PublishKey:
        grant = self.result.grant
        return PublishKey(grant.publish_epoch, grant.publish_key, 0)

    def receiver(self) -> PublicationReceiver:
        return PublicationReceiver(self.result.master_pub, self.publish_key(),
                                   clock_offset_ms=self.result.clock_offset_ms)

    def close(self) -> None:
        self.client.close()


class Sniffer:
    """A SUB socket on the master's publish port that keeps every publication it sees."""

    def __init__(self, publish_port: int, topics: tuple[bytes, ...] = (b"",)):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        for topic in topics:
            self.sock.setsockopt(zmq.SUBSCRIBE, topic)
        self.sock.connect(transport.tcp_address("127.0.0.1", publish_port))

    def next(self, timeout: float) -> tuple[bytes, bytes] | None:
        return transport.recv_publication(self.sock, int(timeout * 1000))

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()
