"""Issue 5: hostile peers against a real master and three real minions.

* Tampered and replayed publications: a real publication is captured off the publish port
  with a SUB socket, altered (or not), and pushed back through the master's own publisher:
  the test connects a PUSH socket to ``sock_dir/publish_pull.ipc`` as the master's user (the
  only user who can: the socket is 0600 in a 0700 directory), so the minions receive the frame
  exactly as they receive real jobs, over their one subscription to the master.  What proves
  that a minion refused it: its log names the refusal, and the job's marker file is not
  written again.
* A replayed return: a rogue client holding a real accepted key (built from runtime.crypt, as
  a minion is) seals a ``_return`` and sends the very same bytes twice through the ret port.
* Malformed frames to the ret port, from a raw DEALER and from raw TCP: each gets an error reply
  or is dropped, and the master answers jobs during and after.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
import zmq

from runtime import codec, transport
from runtime.crypt.channel import ClientChannel
from runtime.crypt.handshake import finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.crypt.trust import MasterTrust
from runtime.events import EventListener
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.slow

ALL = {"web01": True, "web02": True, "db01": True}


@pytest.fixture(scope="module")
def ctx() -> Iterator[zmq.Context]:
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def marker_job(cluster: Cluster, tag: str) -> None:
    """cmd.run that appends the minion's id to markers-<tag>."""
    proc = cluster.run("*", "cmd.run", f'echo "$SALTPAN_TEST_ID" >> {cluster.base}/markers-{tag}', "--timeout", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def marker_lines(cluster: Cluster, tag: str) -> list[str]:
    path = cluster.base / f"markers-{tag}"
    return sorted(path.read_text().split()) if path.exists() else []


def capture_publication(cluster: Cluster, ctx: zmq.Context, tag: str) -> bytes:
    """Run a marker job while a SUB socket listens on the publish port; return its publication."""
    sub = transport.make_subscriber(ctx, transport.tcp_address("127.0.0.1", cluster.publish_port))
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    try:
        time.sleep(0.5)  # let the subscription reach the publisher
        marker_job(cluster, tag)
        got = transport.recv_publication(sub, 5000)
        assert got is not None, "no publication seen on the publish port"
        return got[1]
    finally:
        sub.close(linger=0)


class Injector:
    """A PUSH socket into the master's Publisher (one connection, so frames keep their order)."""

    def __init__(self, cluster: Cluster, ctx: zmq.Context):
        self.sock = ctx.socket(zmq.PUSH)
        self.sock.connect(f"ipc://{cluster.sock_dir / 'publish_pull.ipc'}")

    def send(self, body: bytes, topic: bytes = transport.BROADCAST) -> None:
        """Hand ``body`` to the Publisher, as a worker does."""
        self.sock.send_multipart([topic, body])

    def close(self) -> None:
        self.sock.close(linger=2000)


def inject(cluster: Cluster, ctx: zmq.Context, *bodies: bytes) -> None:
    injector = Injector(cluster, ctx)
    try:
        for body in bodies:
            injector.send(body)
    finally:
        injector.close()


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


def count_in_logs(cluster: Cluster, text: str) -> dict[str, int]:
    return {m: cluster.minions[m].log().count(text) for m in cluster.minions}


def test_tampered_publication_is_dropped(cluster: Cluster, ctx: zmq.Context) -> None:
    """Proves: a publication with one bit flipped in its job, header or signature, a job sent in
    clear text and undecodable bytes reach every minion through the real publisher and each is
    refused (the minion logs the bad signature and the clear-text refusal), nothing runs (the
    marker file keeps its three lines) and the minions keep working."""
    body = capture_publication(cluster, ctx, "tamper")
    assert marker_lines(cluster, "tamper") == ["db01", "web01", "web02"]
    load = codec.unpack_envelope(body).load
    before = count_in_logs(cluster, "publication is not signed by the trusted master key")
    # one flipped bit in the ciphertext (the job), the header (epoch/serial/time) or the signature
    altered = [codec.pack_envelope(codec.ENC_AES, dict(load, **{field: flip(load[field], len(load[field]) // 2)}))
               for field in ("ct", "h", "sig")]
    # then a job in clear text, and bytes that are not msgpack at all (minions log the first
    # refusal of each kind, so the clear job goes first: it is the one whose refusal we look for)
    clear = codec.pack_envelope(codec.ENC_CLEAR, {"jid": "20990101000000000000", "fun": "cmd.run",
                                                  "arg": ["touch /tmp/never"], "tgt": "*"})
    inject(cluster, ctx, *altered, clear, b"\xc1 not msgpack")
    wait_for(lambda: all(n > before[m] for m, n in count_in_logs(
        cluster, "publication is not signed by the trusted master key").items()), 10,
        what="every minion to log the bad signature")
    wait_for(lambda: all("clear-text publications are never accepted" in d.log()
                         for d in cluster.minions.values()), 10, what="every minion to refuse the clear job")
    time.sleep(0.5)
    assert marker_lines(cluster, "tamper") == ["db01", "web01", "web02"]
    assert cluster.run_json("*", "test.ping") == ALL


def test_replayed_publication_is_dropped(cluster: Cluster, ctx: zmq.Context) -> None:
    """The untouched publication sent again: refused by every minion's serial window."""
    body = capture_publication(cluster, ctx, "replay")
    assert marker_lines(cluster, "replay") == ["db01", "web01", "web02"]
    inject(cluster, ctx, body)
    wait_for(lambda: all("was already accepted" in d.log()
                         for d in cluster.minions.values()), 10, what="every minion to refuse the replay")
    time.sleep(0.5)
    assert marker_lines(cluster, "replay") == ["db01", "web01", "web02"]


def test_publication_replayed_to_a_restarted_minion_is_dropped(cluster: Cluster, ctx: zmq.Context) -> None:
    """A minion restarted after a job was published has a fresh serial window and forgot which
    jobs it ran; the old publication (still within its 300 s of validity, same publish key)
    must not run again there."""
    body = capture_publication(cluster, ctx, "restart")
    assert marker_lines(cluster, "restart") == ["db01", "web01", "web02"]
    cluster.minions["web02"].stop()
    cluster.minions["web02"].start()
    cluster.wait_ping(["web02"])
    inject(cluster, ctx, body)
    wait_for(lambda: "published before this minion's session" in cluster.minions["web02"].log(), 10,
             what="web02 to refuse the old publication")
    time.sleep(0.5)
    assert marker_lines(cluster, "restart") == ["db01", "web01", "web02"]


# ---------------------------------------------------------------- a rogue client with a real key

class Rogue:
    """A minion written from runtime.crypt: authenticates over the real ret port."""

    def __init__(self, cluster: Cluster, ctx: zmq.Context, minion_id: str, pki: Path):
        self.cluster = cluster
        self.id = minion_id
        self.identity = Identity.generate()
        self.trust = MasterTrust(str(pki))
        self.client = transport.RequestClient(transport.tcp_address("127.0.0.1", cluster.ret_port), ctx=ctx,
                                              timeout=3, tries=1)
        self.channel: ClientChannel | None = None

    def hello(self) -> str:
        attempt = start_auth(self.identity, self.id)
        reply = self.client.request(codec.pack_envelope(codec.ENC_CLEAR, attempt.load))
        result = finish_auth(attempt, codec.unpack_envelope(reply).load, self.trust)
        if result.outcome == "accepted":
            self.channel = ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)
        return result.outcome

    def seal(self, payload: dict) -> tuple[int, bytes]:
        assert self.channel is not None
        return self.channel.seal_request(payload)

    def send(self, counter: int, body: bytes) -> dict:
        """Send sealed bytes; the opened reply, or {"error": {...}} for a refusal."""
        reply = self.client.request(body)
        envelope = codec.unpack_envelope(reply)
        if envelope.enc == codec.ENC_CLEAR:
            return envelope.load
        assert self.channel is not None
        return self.channel.open_reply(counter, reply)

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def rogue(cluster: Cluster, ctx: zmq.Context, tmp_path: Path) -> Iterator[Rogue]:
    minion = Rogue(cluster, ctx, "rogue01", tmp_path / "rogue-pki")
    try:
        assert minion.hello() == "pending"
        cluster.key("-a", "rogue01", "-y")
        assert minion.hello() == "accepted"
        yield minion
    finally:
        minion.close()
        cluster.key("-d", "rogue01", "-y")


def async_jid(cluster: Cluster, *args: str) -> str:
    proc = cluster.run(*args, "--async")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().rsplit(" ", 1)[1]


def test_replayed_return_is_refused(cluster: Cluster, rogue: Rogue) -> None:
    """Proves: the same sealed _return sent twice is processed once (the second gets `replayed`
    from the shared replay window), a freshly sealed second return for the job is refused as a
    duplicate, and exactly one return event and one job cache entry exist."""
    listener = EventListener(str(cluster.sock_dir), "salt/job/")
    try:
        assert listener.wait_connected(str(cluster.sock_dir), 3)
        jid = async_jid(cluster, "-L", "rogue01", "test.ping")
        counter, sealed = rogue.seal({"cmd": "_return", "jid": jid, "fun": "test.ping", "fun_args": [],
                                      "return": "first", "retcode": 0, "success": True})
        assert rogue.send(counter, sealed) == {"ok": True}
        # the very same bytes again (what an eavesdropper on the path would resend)
        replayed = rogue.send(counter, sealed)
        assert replayed["error"]["reason"] == "replayed", replayed
        # a freshly sealed second return for the same job is a duplicate, not a second answer
        counter, sealed = rogue.seal({"cmd": "_return", "jid": jid, "fun": "test.ping", "fun_args": [],
                                      "return": "second", "retcode": 0, "success": True})
        assert rogue.send(counter, sealed)["error"]["reason"] == "duplicate"
        rets = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            event = listener.get(0.2)
            if event and event[0].startswith(f"salt/job/{jid}/ret/"):
                rets.append(event)
        assert [(tag, data["return"]) for tag, data in rets] == [(f"salt/job/{jid}/ret/rogue01", "first")]
    finally:
        listener.close()
    looked = cluster.saltpan("jobs", "-c", str(cluster.master_conf), "lookup", jid, "--out", "json")
    assert looked.stdout.strip().replace(" ", "").replace("\n", "") == '{"rogue01":"first"}'


def test_a_minion_cannot_return_for_another(cluster: Cluster, rogue: Rogue) -> None:
    """Proves: an accepted minion cannot answer for a job sent to another minion, whatever id it
    writes in the payload (the id comes from its session); the real minion's return still counts."""
    jid = async_jid(cluster, "-L", "web01", "test.sleep", "2")
    counter, sealed = rogue.seal({"cmd": "_return", "id": "web01", "jid": jid, "fun": "test.sleep",
                                  "fun_args": [2], "return": "forged", "retcode": 0, "success": True})
    reply = rogue.send(counter, sealed)
    assert reply["error"]["reason"] == "id_mismatch", reply  # a load naming another id is refused outright
    counter, sealed = rogue.seal({"cmd": "_return", "jid": jid, "fun": "test.sleep", "fun_args": [2],
                                  "return": "forged", "retcode": 0, "success": True})
    reply = rogue.send(counter, sealed)
    assert reply["error"]["reason"] == "not_targeted", reply  # and without an id, the session's id is used
    wait_for(lambda: '"web01": true' in cluster.saltpan("jobs", "-c", str(cluster.master_conf), "lookup", jid,
                                                         "--out", "json").stdout, 15, what="web01's own return")


def test_unlisted_and_internal_commands_are_refused(cluster: Cluster, rogue: Rogue) -> None:
    """Proves: inside a valid session, clear-only commands, dunders, internal method names and
    non-string commands get `unknown_command`, and a minion cannot fire master-only event tags."""
    for cmd in ("_auth", "publish", "__init__", "_handle_aes", "close", 5, None):
        counter, sealed = rogue.seal({"cmd": cmd})
        assert rogue.send(counter, sealed)["error"]["reason"] == "unknown_command", cmd
    counter, sealed = rogue.seal({"cmd": "_minion_event", "events": [{"tag": "salt/job/1/new", "data": {}}]})
    assert rogue.send(counter, sealed) == {"ok": True, "fired": 0}


# ---------------------------------------------------------------- malformed frames to the ret port

def raw_request(ctx: zmq.Context, port: int, frames: list[bytes], wait: float = 2.0) -> list[bytes] | None:
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    try:
        sock.send_multipart(frames)
        if sock.poll(int(wait * 1000), zmq.POLLIN):
            return sock.recv_multipart()
        return None
    finally:
        sock.close(linger=0)


def error_reason(reply: list[bytes] | None) -> str:
    assert reply is not None and len(reply) == 3, reply
    load = codec.unpack_envelope(reply[2]).load
    return load["error"]["reason"]


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


BAD_BODIES = {
    "not msgpack": (b"\xc1\xc1 junk", "malformed"),
    "truncated": (codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "_auth"})[:-3], "malformed"),
    "a list": (msgpack.packb([1, 2, 3]), "bad_envelope"),
    "enc not a string": (msgpack.packb({"enc": 5, "load": {}}), "bad_envelope"),
    "load not a map": (msgpack.packb({"enc": "clear", "load": "publish"}), "bad_envelope"),
    "cmd an int": (msgpack.packb({"enc": "clear", "load": {"cmd": 5}}), "unknown_command"),
    "dunder cmd": (msgpack.packb({"enc": "clear", "load": {"cmd": "__class__"}}), "unknown_command"),
    "aes cmd in clear": (msgpack.packb({"enc": "clear", "load": {"cmd": "_return", "jid": "1"}}), "unknown_command"),
    "bad hello": (msgpack.packb({"enc": "clear", "load": {"cmd": "_auth", "id": 7}}), "malformed"),
    "publish without proof": (msgpack.packb({"enc": "clear", "load": {"cmd": "publish", "body": b"x"}}),
                              "bad_proof"),
    "aes garbage": (msgpack.packb({"enc": "aes", "load": {"h": b"x", "ct": b"y"}}), "malformed"),
    "too deep": (msgpack.packb({"enc": "clear", "load": {"x": nested(200)}}), "too_deep"),
    "ext type": (b"\x82\xa3enc\xa5clear\xa4load\xd4\x01\x00", "ext_type"),
    "map with float key": (b"\x82\xa3enc\xa5clear\xa4load\x81\xcb" + b"\x00" * 8 + b"\x01", "bad_key"),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_malformed_body_gets_an_error_reply(cluster: Cluster, ctx: zmq.Context, name: str) -> None:
    """Proves: each malformed body through the real ReqServer gets a clear error reply naming why."""
    body, reason = BAD_BODIES[name]
    reply = raw_request(ctx, cluster.ret_port, [b"", os.urandom(8), body])
    assert error_reason(reply) == reason


def test_malformed_framing_is_dropped_and_the_master_keeps_serving(cluster: Cluster, ctx: zmq.Context) -> None:
    """Proves: wrong frame counts, a wrong request id size and a frame over max_message_size are
    dropped without a reply, and jobs still run afterwards."""
    body = codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "nothing"})
    assert raw_request(ctx, cluster.ret_port, [b"", b"short", body], 0.5) is None           # rid not 8 bytes
    assert raw_request(ctx, cluster.ret_port, [os.urandom(8), body], 0.5) is None           # no empty frame
    assert raw_request(ctx, cluster.ret_port, [b"", os.urandom(8), body, b"x"], 0.5) is None  # one too many
    assert raw_request(ctx, cluster.ret_port, [b""] + [b"x"] * 50, 0.5) is None             # fifty frames
    assert raw_request(ctx, cluster.ret_port, [b"", os.urandom(8), b""], 1)  # empty body: answered
    # one frame over max_message_size (16 MiB): libzmq drops the connection, nothing is answered
    assert raw_request(ctx, cluster.ret_port, [b"", os.urandom(8), b"\x00" * (17 * 1024 * 1024)], 1) is None
    assert cluster.run_json("*", "test.ping") == ALL


def test_half_sent_messages_and_junk_do_not_stall_the_master(cluster: Cluster, ctx: zmq.Context) -> None:
    """While raw TCP peers hold half-sent greetings and half-sent frames open and a DEALER
    streams junk, jobs still go through; afterwards too."""
    held: list[socket.socket] = []
    stop = threading.Event()
    answered = []

    def junk() -> None:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{cluster.ret_port}")
        try:
            while not stop.is_set():
                sock.send_multipart([b"", os.urandom(8), os.urandom(64)])
                if sock.poll(50, zmq.POLLIN):
                    answered.append(sock.recv_multipart())
                time.sleep(0.02)  # ~40 a second, below the per-peer clear rate limit
        finally:
            sock.close(linger=0)

    thread = threading.Thread(target=junk, daemon=True)
    try:
        for payload in (b"\xff\x00\x00", b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00NULL",
                        b"GET / HTTP/1.1\r\nHost: x\r\n"):
            sock = socket.create_connection(("127.0.0.1", cluster.ret_port), timeout=2)
            sock.sendall(payload)
            held.append(sock)
        # a complete ZMTP 3.0 NULL handshake, then a frame that announces 1 MiB and sends 10 bytes
        sock = socket.create_connection(("127.0.0.1", cluster.ret_port), timeout=2)
        sock.sendall(b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31)
        ready = b"\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"
        sock.sendall(b"\x04" + bytes([len(ready)]) + ready + b"\x02" + (1024 * 1024).to_bytes(8, "big") + b"0123456789")
        held.append(sock)
        thread.start()
        for _ in range(3):
            assert cluster.run_json("*", "test.ping") == ALL
        assert answered, "the junk got error replies"
    finally:
        stop.set()
        thread.join(5)
        for sock in held:
            sock.close()
    assert cluster.run_json("*", "test.ping") == ALL
