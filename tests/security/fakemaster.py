"""A fake master on loopback, between one real minion and the real master (actor A2).

It binds its own ROUTER (the minion's ``master_port``) and PUB (the minion's
``publish_port``).  In ``relay`` mode it passes requests to the real master and real
publications to the minion, unchanged, so the minion works normally through it; every frame it
sees is kept so a test can check that nothing secret crossed the wire in clear.  Other modes
answer the minion's auth hellos itself, rewrite sealed replies, or inject publications:

* ``own_key``     a complete, valid auth reply signed with a *different* master key (a new
                  master, or an attacker who took over the address): the minion must refuse the
                  changed key and keep the one it trusts;
* ``stolen_pub``  the reply carries the real master's public key, but is signed with another
                  key (the attacker has the public key, not the private one);
* ``unsigned``    an unsigned "accepted" load and an unsigned error;
* ``replay``      the real master's last accepted reply to this minion, replayed for a new hello;
* ``weak_key``    a valid-looking accepted reply whose master key is the neutral point (small
                  order) with the "universal" signature OpenSSL verifies under it: a minion
                  must refuse it, and never remember such a key on first contact;
* ``clear_replies`` sealed replies from the real master are replaced with clear loads holding
                  made-up data (a forged ``_pillar`` reply), the auth still relayed.

Runs in a thread; every socket is bound to 127.0.0.1 on a free port and closed by ``close()``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from typing import Any

import zmq

from runtime import codec, transport
from runtime.crypt.errors import CryptoError
from runtime.crypt.handshake import AuthGrant, answer_hello, verify_hello
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublishKey, seal_publication
from tests.netutil import free_port

MODES = ("relay", "own_key", "stolen_pub", "unsigned", "replay", "weak_key", "clear_replies")
NEUTRAL_POINT = bytes([1]) + bytes(31)     # a small-order Ed25519 key: (R = it, S = 0) "verifies" anything
FORGED_PILLAR = {"forged": "FORGED-BY-FAKE-MASTER", "secret": "overwritten"}


class FakeMaster:
    def __init__(self, real_ret_port: int, real_pub_port: int, real_master_pub: bytes | None = None):
        self.identity = Identity.generate()          # not the real master's key
        self.real_master_pub = real_master_pub
        self.fake_publish_key = PublishKey.generate(1)
        self.ret_port = free_port()
        self.pub_port = free_port()
        self.real_ret = transport.tcp_address("127.0.0.1", real_ret_port)
        self.real_pub = transport.tcp_address("127.0.0.1", real_pub_port)
        self.mode = "relay"
        self.forward_publications = True
        self.seen: list[bytes] = []                  # every body that crossed, both ways (bounded)
        self.hellos = 0                              # hellos answered by the fake (not relayed)
        self.last_accepted_reply: bytes | None = None
        self._inject: queue.Queue[tuple[bytes, bytes]] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fake-master", daemon=True)
        self._lock = threading.Lock()

    # -- control ----------------------------------------------------------------------
    def start(self) -> FakeMaster:
        self._thread.start()
        if not self._ready.wait(5):
            raise RuntimeError(f"fake master did not start: {self._error!r}")
        return self

    def set_mode(self, mode: str) -> None:
        assert mode in MODES, mode
        self.mode = mode

    def inject(self, body: bytes, topic: bytes = transport.BROADCAST) -> None:
        """Publish ``body`` to the minion as if it came from the master's publish port."""
        self._inject.put((topic, body))

    def forge_publication(self, job: dict[str, Any], *, serial: int = 1, pkey: PublishKey | None = None,
                          signer: Identity | None = None) -> bytes:
        """A publication sealed with ``pkey`` (default: a key the fake made up) and signed by
        ``signer`` (default: the fake master's own key)."""
        return seal_publication(signer or self.identity, pkey or self.fake_publish_key, serial, job)

    def snapshot(self) -> list[bytes]:
        with self._lock:
            return list(self.seen)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    # -- the loop ---------------------------------------------------------------------
    def _keep(self, body: bytes) -> None:
        with self._lock:
            self.seen.append(bytes(body))
            if len(self.seen) > 5000:
                del self.seen[:1000]

    def _run(self) -> None:
        ctx = zmq.Context()
        front = transport.make_socket(ctx, zmq.ROUTER)
        back = transport.make_socket(ctx, zmq.DEALER)
        sub = transport.make_socket(ctx, zmq.SUB)
        pub = transport.make_socket(ctx, zmq.PUB)
        routes: OrderedDict[bytes, bytes] = OrderedDict()   # rid -> client identity
        try:
            transport.bind(front, transport.tcp_address("127.0.0.1", self.ret_port))
            transport.bind(pub, transport.tcp_address("127.0.0.1", self.pub_port))
            back.connect(self.real_ret)
            sub.setsockopt(zmq.SUBSCRIBE, b"")
            sub.connect(self.real_pub)
            poller = zmq.Poller()
            for sock in (front, back, sub):
                poller.register(sock, zmq.POLLIN)
            self._ready.set()
            while not self._stop.is_set():
                events = dict(poller.poll(20))
                if front in events:
                    self._from_minion(front, back, routes)
                if back in events:
                    self._from_master(front, back, routes)
                if sub in events:
                    frames = sub.recv_multipart()
                    if len(frames) == 2:
                        self._keep(frames[1])
                        if self.forward_publications:
                            pub.send_multipart(frames)
                while True:
                    try:
                        topic, body = self._inject.get_nowait()
                    except queue.Empty:
                        break
                    pub.send_multipart([topic, body])
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._error = exc
            self._ready.set()
        finally:
            for sock in (front, back, sub, pub):
                sock.close(linger=0)
            ctx.term()

    def _from_minion(self, front: zmq.Socket, back: zmq.Socket, routes: OrderedDict[bytes, bytes]) -> None:
        frames = front.recv_multipart()
        if len(frames) != 4:
            return
        ident, _, rid, body = frames
        self._keep(body)
        forged = (self._answer_hello(body) if self.mode in ("own_key", "stolen_pub", "unsigned", "replay", "weak_key")
                  else None)
        if forged is not None:
            front.send_multipart([ident, b"", rid, forged])
            return
        routes[rid] = ident
        while len(routes) > 10_000:
            routes.popitem(last=False)
        back.send_multipart([b"", rid, body])

    def _from_master(self, front: zmq.Socket, back: zmq.Socket, routes: OrderedDict[bytes, bytes]) -> None:
        frames = back.recv_multipart()
        if len(frames) != 3:
            return
        _, rid, reply = frames
        ident = routes.pop(rid, None)
        if ident is None:
            return
        self._keep(reply)
        try:
            envelope = codec.unpack_envelope(reply)
        except codec.DecodeError:
            envelope = None
        if envelope is not None and envelope.enc == codec.ENC_CLEAR and envelope.load.get("outcome") == "accepted":
            self.last_accepted_reply = reply
        if self.mode == "clear_replies" and envelope is not None and envelope.enc == codec.ENC_AES:
            reply = codec.pack_envelope(codec.ENC_CLEAR, {"pillar": dict(FORGED_PILLAR), "ok": True})
        front.send_multipart([ident, b"", rid, reply])

    def _answer_hello(self, body: bytes) -> bytes | None:
        try:
            envelope = codec.unpack_envelope(body)
            if envelope.enc != codec.ENC_CLEAR or envelope.load.get("cmd") != "_auth":
                return None
            hello = verify_hello(envelope.load)
        except (codec.DecodeError, CryptoError):
            return None
        self.hellos += 1
        if self.mode == "unsigned":
            load = ({"outcome": "accepted", "id": hello.minion_id, "grant": {"publish_key": b"\0" * 32}}
                    if self.hellos % 2 else codec.error_load("accepted", "welcome"))
            return codec.pack_envelope(codec.ENC_CLEAR, load)
        if self.mode == "replay":
            if self.last_accepted_reply is None:
                return None
            return self.last_accepted_reply

        def grant(keys: Any) -> AuthGrant:
            return AuthGrant(0.5, self.fake_publish_key.epoch, self.fake_publish_key.key, {})

        reply, _ = answer_hello(self.identity, hello, "accepted", grant=grant, now=int(time.time() * 1000))
        if self.mode == "stolen_pub" and self.real_master_pub is not None:
            reply = dict(reply, master_pub=self.real_master_pub)
        if self.mode == "weak_key":
            reply = dict(reply, master_pub=NEUTRAL_POINT, sig=NEUTRAL_POINT + bytes(32))
        return codec.pack_envelope(codec.ENC_CLEAR, reply)
