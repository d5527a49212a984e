"""Class 9: denial of service against the request port (CVE-2023-20897 and its family).

Oversized frames, hostile msgpack (deep nesting, huge declared lengths, extension types, odd
keys), malformed multipart messages, half-sent messages and idle connections, key-store
flooding with new ids, and a flood from one peer.  Each is refused cheaply, with bounded
memory and descriptors, while the legit round trip goes on.  (The sustained floods are in
test_floods.py.)
"""

from __future__ import annotations

import os
import time

import msgpack
import pytest

from runtime import codec
from runtime.crypt.handshake import start_auth
from runtime.crypt.identity import Identity
from tests.security.clients import ZMTP_GREETING, ZMTP_READY, hold_tcp, reason, zmtp_frame
from tests.security.guard import lab_attack
from tests.security.lab import MAX_PENDING, Lab

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def nested(depth: int) -> bytes:
    return b"\x82\xa3enc\xa5clear\xa4load\x81\xa1x" + b"\x91" * depth + b"\xc0"


HOSTILE_BODIES = {
    "too_deep": [nested(100), nested(100_000)],
    "too_long": [b"\x82\xa3enc\xa5clear\xa4load\xdd\xff\xff\xff\xff",            # array32: 4 G items
                 b"\x82\xa3enc\xa5clear\xa4load\xdf\x7f\xff\xff\xff"],           # map32: 2 G pairs
    "malformed": [b"\x82\xa3enc\xa5clear\xa4load\xdb\xff\xff\xff\xff" + b"x" * 10,  # str32 of 4 GiB
                  b"\xc1", b"", codec.pack_envelope("clear", {"cmd": "_auth"}) + b"trailing",
                  b"\x82\xa3enc\xa5clear\xa4load\x81\xa1x\xa2\xff\xfe"],          # invalid UTF-8
    "ext_type": [b"\x82\xa3enc\xa5clear\xa4load\x81\xa1x\xd6\xff" + b"\x00" * 4,    # a timestamp
                 b"\x82\xa3enc\xa5clear\xa4load\x81\xa1x\xc7\x05\x07" + b"\x00" * 5],
    "bad_key": [b"\x82\xa3enc\xa5clear\xa4load\x81\xc3\x01",                       # map key True
                b"\x82\xa3enc\xa5clear\xa4load\x81\x91\x01\x01"],                  # map key [1]
    "duplicate_key": [b"\x83\xa3enc\xa5clear\xa4load\x80\xa3enc\xa3aes",             # enc twice
                      b"\x82\xa3enc\xa5clear\xa4load\x82\xa3cmd\xa7publish\xa3cmd\xa5_auth"],  # cmd twice
    "bad_envelope": [msgpack.packb([1, 2]), msgpack.packb({"enc": "zip", "load": {}}),
                     msgpack.packb({"enc": "clear", "load": [], "x": 1})],
}


def test_hostile_msgpack_and_oversized_frames(lab: Lab) -> None:
    with lab_attack(lab, logs=[("master", r"refused request from 127\.0\.0\.31: too_deep"),
                               ("master", r"refused request from 127\.0\.0\.31: too_long")]) as atk:
        raw = atk.raw(source="127.0.0.31")
        for expected, bodies in HOSTILE_BODIES.items():
            for body in bodies * 3:
                assert reason(raw.decode(raw.request(body))) == expected, (expected, body[:40])
        # a million small items is within the limits: decoded and refused for what it is
        big = msgpack.packb({"enc": "clear", "load": {"cmd": "_auth", "x": [0] * 1_000_000}})
        assert reason(raw.decode(raw.request(big, wait=10))) == "malformed"
        # one frame over max_message_size: libzmq drops the connection, nothing is answered
        assert raw.request(b"\x00" * (17 * 1024 * 1024), wait=2) is None
        raw.reconnect()
        assert reason(raw.decode(raw.request(nested(100)))) == "too_deep"


def test_malformed_multipart_messages(lab: Lab) -> None:
    with lab_attack(lab, logs=[("master", r"dropped a malformed request")]) as atk:
        raw = atk.raw(source="127.0.0.32")
        body = codec.pack_envelope("clear", {"cmd": "_auth"})
        for frames in ([b"", b"short", body], [os.urandom(8), body], [b"", os.urandom(8), body, b"x"],
                       [b""] + [b"x"] * 9, [b""] * 500, [body], [b"", b"", b""], [b"", os.urandom(8)],
                       [b"", os.urandom(9), body]):
            for _ in range(2):
                assert raw.exchange(frames, wait=0.2) is None, frames[:3]
        assert reason(raw.decode(raw.request(b"\xc1"))) == "malformed"   # still served afterwards


def test_half_sent_messages_and_idle_connections(lab: Lab) -> None:
    """Two hundred connections that stop half-way (a greeting cut short, HTTP, a frame that
    announces 1 MiB and sends 10 bytes) held open while jobs run; released afterwards."""
    with lab_attack(lab) as atk:
        partial = [b"", b"\xff\x00\x00", ZMTP_GREETING[:20], b"GET / HTTP/1.1\r\nHost: x\r\n",
                   ZMTP_GREETING + ZMTP_READY + b"\x02" + (1024 * 1024).to_bytes(8, "big") + b"0123456789",
                   ZMTP_GREETING + ZMTP_READY + zmtp_frame(b"", more=True) + zmtp_frame(b"12345678", more=True)]
        held = hold_tcp(lab.cl.ret_port, partial, count=34)
        try:
            for _ in range(3):
                assert atk.ping("db01")
            time.sleep(1)
        finally:
            for sock in held:
                sock.close()


def test_key_store_flooding_with_new_ids(lab: Lab) -> None:
    """New ids fill the pending set up to max_pending_keys and no further; the rest are refused
    (signed) without a file written; the refusal is logged once, not once per id."""
    before = set(lab.keys()["minions_pre"])
    raw_ids = [f"keyflood-{os.urandom(3).hex()}-{i}" for i in range(MAX_PENDING + 30)]
    try:
        with lab_attack(lab, keys_change=True, logs=[("master", r"refused \(pending_full\)")]) as atk:
            outcomes = {}
            clients = [atk.raw(source=f"127.0.0.{40 + n}") for n in range(4)]
            for i, minion_id in enumerate(raw_ids):
                raw = clients[i % len(clients)]
                hello = codec.pack_envelope(codec.ENC_CLEAR, start_auth(Identity.generate(), minion_id).load)
                reply = raw.decode(raw.request(hello))
                outcomes[minion_id] = reply.get("reason") or reply.get("outcome")
            pending = set(lab.keys()["minions_pre"]) - before
            assert len(before | pending) == MAX_PENDING, len(before | pending)
            assert {outcomes[m] for m in pending} == {"pending"}
            assert {v for m, v in outcomes.items() if m not in pending} == {"pending_full"}
    finally:
        lab.cl.key("-d", "keyflood-*", "-y")


def test_clear_flood_from_one_peer(lab: Lab) -> None:
    """One address sends two thousand clear requests without waiting, and another never reads
    its replies: the first is rate-limited (answered by the proxy, never reaching a worker)."""
    with lab_attack(lab, logs=[("master", r"refused auth request from 127\.0\.0\.5[01] \(rate_limited\)")]) as atk:
        raw = atk.raw(source="127.0.0.50")
        deaf = atk.raw(source="127.0.0.51")
        body = codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "_auth", "junk": b"x" * 100})
        for _ in range(2000):
            raw.send([b"", os.urandom(8), body])
            deaf.send([b"", os.urandom(8), body])
        replies = []
        deadline = time.monotonic() + 5
        while len(replies) < 2000 and time.monotonic() < deadline:
            frames = raw.recv(0.5)
            if frames is not None:
                replies.append(reason(codec.unpack_envelope(frames[2]).load))
        assert replies.count("rate_limited") >= 1000, {r: replies.count(r) for r in set(replies)}
        assert atk.ping("db01")
