"""Seeded mutation fuzzing of everything that parses peer bytes: only typed refusals may escape.

A short deterministic run here; ``SALTPAN_FUZZ_ITERATIONS=300000 SALTPAN_FUZZ_SEED=7`` runs longer
by hand (a long run found a reply ``now`` beyond 64 bits, now refused as malformed).
"""

from __future__ import annotations

import os
import random

import pytest

from runtime import codec
from runtime.crypt.channel import ServerChannel
from runtime.crypt.errors import CryptoError
from runtime.crypt.handshake import AuthGrant, answer_hello, finish_auth, start_auth, verify_hello
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublicationReceiver, PublishKey, seal_publication

ITERATIONS = int(os.environ.get("SALTPAN_FUZZ_ITERATIONS", "3000"))
SEED = int(os.environ.get("SALTPAN_FUZZ_SEED", "0"))
TYPED = (codec.DecodeError, CryptoError)


def mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1 and data:
            del data[rng.randrange(len(data)):][:rng.randint(1, 8)]
        elif op == 2:
            at = rng.randrange(len(data) + 1)
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and data:
            data = data[:rng.randrange(len(data))]
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice([b"\xdf\xff\xff\xff\xff", b"\xdd\x7f\xff\xff\xff", b"\xc7\x00\x05",
                                      b"\x91" * 80, b"\xc1", b"\x81\xc0\xc0"])
    return bytes(data)


def test_codec_never_raises_untyped():
    rng = random.Random(SEED * 2 + 1)
    seeds = [codec.pack_envelope("clear", {"cmd": "_auth", "id": "web1", "n": [1, 2.5, None, b"x"]}),
             codec.pack({"a": {"b": {"c": [True, -1, "é" * 40]}}}), codec.pack(list(range(100)))]
    for _ in range(ITERATIONS):
        data = mutate(rng, rng.choice(seeds))
        try:
            codec.unpack_envelope(data)
        except codec.DecodeError:
            pass


def test_peer_facing_parsers_never_raise_untyped(fleet):
    rng = random.Random(SEED * 2 + 2)
    master = fleet.master
    _, result, client, _ = fleet.accepted("web1")
    server = ServerChannel(fleet.store)
    minion = Identity.generate()
    pkey = PublishKey.generate(1)
    receiver = PublicationReceiver(master.public_raw, pkey)

    hello_attempt = start_auth(minion, "web1")
    seeds = {
        "request": client.seal_request({"cmd": "_return", "jid": "1"})[1],
        "hello": codec.pack_envelope("clear", hello_attempt.load),
        "reply": codec.pack_envelope("clear", answer_hello(master, verify_hello(hello_attempt.load), "accepted",
                                                           grant=AuthGrant(5.0, 1, b"k" * 32))[0]),
        "publication": seal_publication(master, pkey, 1, {"fun": "test.ping"}),
    }

    class TrustAll:
        def check(self, pub):
            pass

        def remember(self, pub):
            pass

    for i in range(ITERATIONS):
        kind = rng.choice(sorted(seeds))
        data = mutate(rng, seeds[kind])
        try:
            if kind == "publication":
                receiver.open(data)
            else:
                env = codec.unpack_envelope(data)
                if kind == "request":
                    server.open_request(env.load)
                elif kind == "hello":
                    fleet.auth.handle(env.load)
                else:
                    finish_auth(hello_attempt, env.load, TrustAll())
        except TYPED:
            pass
        except Exception as exc:  # pragma: no cover - the point of the test
            pytest.fail(f"iteration {i}, {kind}: untyped {type(exc).__name__}: {exc} for {data!r}")
