"""A hand-built client that speaks the minion protocol to a real master (for forged requests).

It holds a real key the master accepted, so its sealed requests are authentic: what it
tests is that the master acts for the id bound to the session and nothing else.
Built only from runtime.crypt and runtime.transport, as tests/crypto do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime import codec, transport
from runtime.crypt.channel import ClientChannel
from runtime.crypt.errors import RemoteRefusal
from runtime.crypt.handshake import AuthResult, finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.crypt.trust import MasterTrust
from tests.integration.cluster import Cluster, wait_for


class RogueClient:
    def __init__(self, cluster: Cluster, minion_id: str, pki_dir: Path):
        self.cluster = cluster
        self.minion_id = minion_id
        self.identity = Identity.generate()
        pki_dir.mkdir(parents=True, exist_ok=True)
        self.trust = MasterTrust(str(pki_dir))
        self.client = transport.RequestClient(transport.tcp_address("127.0.0.1", cluster.ret_port), timeout=5,
                                              tries=1)
        self.channel: ClientChannel | None = None

    def hello(self) -> AuthResult:
        attempt = start_auth(self.identity, self.minion_id)
        reply = self.client.request(codec.pack_envelope(codec.ENC_CLEAR, attempt.load))
        return finish_auth(attempt, codec.unpack_envelope(reply).load, self.trust)

    def join(self, timeout: float = 20) -> None:
        """Authenticate; the first hello leaves the key pending, the test accepts it with `saltpan key`."""
        first = self.hello()
        if first.outcome != "accepted":
            assert first.outcome == "pending", first
            self.cluster.key("-a", self.minion_id, "-y")
        result = wait_for(lambda: (r := self.hello()).outcome == "accepted" and r, timeout,
                          what=f"{self.minion_id} accepted")
        self.channel = ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)

    def request(self, payload: dict[str, Any]) -> Any:
        """The opened reply payload; a refusal comes back as {"error": {...}} (sealed or clear)."""
        assert self.channel is not None, "join() first"
        channel = self.channel
        counter, reply = self.client.request_with(lambda: channel.seal_request(payload))
        try:
            return channel.open_reply(counter, reply)
        except RemoteRefusal as exc:
            return {"error": {"reason": exc.reason, "message": str(exc)}, "clear": True}

    def close(self) -> None:
        self.client.close()
