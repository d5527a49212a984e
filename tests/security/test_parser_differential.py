"""Parser differentials: two readers of the same bytes must never disagree (issue 16, item 2).

The instance found by the independent attack suite: the request proxy classified a clear request
by the first ``cmd`` key it met in the raw bytes, while the decoder kept the last one of a
duplicated key, so a hello (``_auth``, rate-limited per peer and globally) packed as
``{"cmd": "publish", ..., "cmd": "_auth"}`` was queued and charged as operator traffic and then
processed as a hello.  The root fix: one decoding (``protocol.read_envelope``) and one command
table for the proxy and the workers, and a codec that refuses duplicate map keys wherever they
are.  The siblings below: the same key twice at each level (envelope, load, nested proof, sealed
payload), and every non-canonical way of writing a request (key order, string widths, a ``cmd``
that is not first) — each is either refused or classified as exactly what the worker runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest

from runtime import codec, protocol
from runtime.crypt import aead
from runtime.crypt.clientkey import make_proof
from runtime.crypt.handshake import start_auth
from runtime.crypt.identity import Identity
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import Lab
from tests.security.test_fuzz import Harness

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def raw_map(pairs: list[tuple[Any, bytes]]) -> bytes:
    """A msgpack map written pair by pair (values already packed), so a key may appear twice."""
    assert len(pairs) < 16
    return bytes([0x80 | len(pairs)]) + b"".join(pack(key) + value for key, value in pairs)


def clear_body(load: bytes) -> bytes:
    return raw_map([("enc", pack("clear")), ("load", load)])


def hello_pairs(minion_id: str) -> list[tuple[str, bytes]]:
    load = start_auth(Identity.generate(), minion_id).load
    return [(key, pack(value)) for key, value in load.items() if key != "cmd"]


def disguised_hello(minion_id: str) -> bytes:
    """The attack: a signed hello whose first ``cmd`` says publish and whose last says _auth."""
    return clear_body(raw_map([("cmd", pack("publish")), *hello_pairs(minion_id), ("cmd", pack("_auth"))]))


# ---------------------------------------------------------------- in process: the codec and the table

VARIANTS: dict[str, Callable[[], bytes]] = {
    "cmd twice, publish first": lambda: disguised_hello("pd-a"),
    "cmd twice, _auth first": lambda: clear_body(raw_map([("cmd", pack("_auth")), *hello_pairs("pd-b"),
                                                          ("cmd", pack("publish"))])),
    "enc twice": lambda: raw_map([("enc", pack("aes")), ("load", pack({"h": b"x", "ct": b"y"})),
                                  ("enc", pack("clear"))]),
    "load twice": lambda: raw_map([("enc", pack("clear")), ("load", pack({"cmd": "publish"})),
                                   ("load", raw_map([("cmd", pack("_auth")), *hello_pairs("pd-c")]))]),
    "proof user twice": lambda: clear_body(raw_map([
        ("cmd", pack("publish")), ("body", pack(b"\x80")),
        ("proof", raw_map([("user", pack("nobody")), ("ts", pack(1)), ("nonce", pack(b"n" * 16)),
                           ("mac", pack(b"m" * 32)), ("user", pack("root"))]))])),
    "same key and value twice": lambda: clear_body(raw_map([("cmd", pack("_auth")), ("cmd", pack("_auth")),
                                                            *hello_pairs("pd-d")])),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_duplicate_keys_are_refused_before_anything_reads_them(name: str) -> None:
    body = VARIANTS[name]()
    with pytest.raises(codec.DecodeError) as err:
        protocol.read_envelope(body)
    assert err.value.reason == "duplicate_key"
    # what the proxy does with it: the most tightly limited class, never the operator's
    assert protocol.classify(body) is protocol.MessageClass.AUTH


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    h = Harness(tmp_path_factory.mktemp("pdiff"))
    yield h
    h.close()


def recording(harness: Harness) -> list[type]:
    """Make the worker note the request class of every handler it runs."""
    ran: list[type] = []
    worker = harness.worker
    original = dict(worker.handlers)

    def wrap(request: type, handler: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        def run(who: str, message: Any) -> Any:
            ran.append(request)
            return handler(who, message)
        return run

    worker.handlers = {request: wrap(request, handler) for request, handler in original.items()}
    return ran


def noncanonical_bodies(harness: Harness) -> dict[str, bytes]:
    hello = start_auth(Identity.generate(), "pd-order").load
    body = codec.pack({"tgt": "pd-none", "fun": "test.ping"})
    publish = {"cmd": "publish", "body": body, "proof": make_proof(harness.client_key, harness.user, body)}
    str8 = b"\xd9" + bytes([len("publish")]) + b"publish"          # "publish" as str8, not fixstr
    return {
        "envelope keys swapped": pack({"load": hello, "enc": "clear"}),
        "cmd last in a hello": pack({"enc": "clear", "load": {**{k: v for k, v in hello.items() if k != "cmd"},
                                                              "cmd": "_auth"}}),
        "cmd last in a publish": pack({"enc": "clear", "load": {"body": publish["body"], "proof": publish["proof"],
                                                                "cmd": "publish"}}),
        "cmd written as str8": clear_body(raw_map([("cmd", str8), ("body", pack(publish["body"])),
                                                   ("proof", pack(publish["proof"]))])),
        "cmd as bytes": pack({"enc": "clear", "load": {**publish, "cmd": b"publish"}}),
        "cmd with a trailing NUL": pack({"enc": "clear", "load": {**publish, "cmd": "publish\x00"}}),
        "enc as bytes": pack({"enc": b"clear", "load": publish}),
        "plain publish": pack({"enc": "clear", "load": publish}),
    }


def test_the_proxy_classifies_every_request_as_the_worker_runs_it(harness: Harness) -> None:
    """Whatever the encoding, the class the proxy queues and charges a request under is the class
    of the handler the worker runs for it, or the hello class (the most tightly limited) for what
    it does not read; never a class the worker's decoding does not give.  A request no handler
    runs gets the hello class."""
    ran = recording(harness)
    bodies = {**noncanonical_bodies(harness), **{name: make() for name, make in VARIANTS.items()}}
    canonical = {"plain publish", "cmd last in a hello", "cmd last in a publish", "cmd written as str8"}
    for name, body in bodies.items():
        ran.clear()
        harness.handle(body)
        assert len(ran) <= 1, name
        expected = ran[0].CLASS if ran else protocol.MessageClass.AUTH
        kind = protocol.classify(body)
        assert kind is expected or (kind is protocol.MessageClass.AUTH and name not in canonical), (name, ran)
    # a sealed request packed with its keys the other way round: run as sealed, charged as a hello
    counter, sealed = harness.channel.seal_request({"cmd": "_file_envs"})
    swapped = pack({"load": codec.unpack_envelope(sealed).load, "enc": "aes"})
    ran.clear()
    assert codec.unpack_envelope(harness.handle(swapped)).enc == codec.ENC_AES
    assert ran == [protocol.FileEnvs] and protocol.classify(swapped) is protocol.MessageClass.AUTH


def test_a_sealed_payload_with_a_key_twice_is_refused(harness: Harness) -> None:
    ran = recording(harness)
    # {"cmd": "_pillar", "grains": {"id": "pd"}, "cmd": "_grains"}, sealed under a real session
    plain = raw_map([("cmd", pack("_pillar")), ("grains", pack({"id": "pd"})), ("cmd", pack("_grains"))])
    counter, sealed = harness.channel.seal_request({"cmd": "_heartbeat"})   # a valid session and counter ...
    header = codec.unpack_envelope(sealed).load["h"]
    ct = aead.seal(harness.channel.keys.c2s, aead.DOMAIN_C2S, counter, plain, header)   # ... carrying the payload
    reply = harness.handle(codec.pack_envelope(codec.ENC_AES, {"h": header, "ct": ct}))
    assert codec.unpack_envelope(reply).load["error"]["reason"] == "duplicate_key"
    assert ran == []


# ---------------------------------------------------------------- against the real master

def test_a_hello_disguised_as_a_publish_is_neither_run_nor_charged_as_one(lab: Lab) -> None:
    """The attack suite's instance, through the real request proxy: every disguised hello is
    refused (no key is stored), and a burst of them is charged to the peer's hello bucket."""
    source = "127.0.0.47"
    with lab_attack(lab, logs=[("master", r"refused request from 127\.0\.0\.47: duplicate_key"),
                               ("master", r"refused auth request from 127\.0\.0\.47 \(rate_limited\)")]) as atk:
        raw = atk.raw(source=source)
        bodies = [disguised_hello(f"pd-{i:04d}") for i in range(40)]
        replies = [raw.decode(raw.request(bodies[i % len(bodies)])) for i in range(40)]
        assert {reason(r) for r in replies} == {"duplicate_key"}
        # a burst well over the per-peer hello allowance: the proxy answers it itself
        for body in bodies * 12:
            raw.send([b"", b"\x00" * 8, body])
        seen: set[str] = set()
        while (frames := raw.recv(2.0)) is not None:
            seen.add(reason(raw.decode(frames[2])))
        assert "rate_limited" in seen and seen <= {"duplicate_key", "rate_limited", "busy"}, seen
