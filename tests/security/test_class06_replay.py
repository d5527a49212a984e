"""Class 6: replayed requests processed twice, even when sent to several workers at once
(CVE-2024-38823: Salt's request server had no replay protection for some loads).

Every sealed request carries a counter admitted once in a window shared by all workers (SQLite),
hellos carry a nonce claimed once, client proofs a nonce claimed once; timestamps bound how
long any capture stays useful.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from runtime import codec
from runtime.crypt.clientkey import load_client_key
from runtime.crypt.handshake import start_auth
from tests.security.clients import publish_load, reason
from tests.security.guard import lab_attack
from tests.security.lab import Lab

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def test_one_sealed_request_sent_many_times_at_once(lab: Lab) -> None:
    """The same sealed bytes through six connections from six source addresses at the same
    instant (so both workers get copies): processed exactly once."""
    tag = f"replay/{os.urandom(6).hex()}"
    with lab_attack(lab, logs=[("master", r"refused sealed request from [0-9.]+ \(replayed\): counter \d+ was already")]) \
            as atk:
        _, body = lab.rogue.sealed({"cmd": "_minion_event", "events": [{"tag": tag, "data": {}}]})
        clients = [atk.raw(source=f"127.0.0.{10 + i}") for i in range(6)]
        barrier = threading.Barrier(len(clients))
        replies: list[bytes | None] = [None] * len(clients)

        def send(i: int) -> None:
            barrier.wait()
            replies[i] = clients[i].request(body, wait=5)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(clients))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        kinds = [codec.unpack_envelope(r).enc if r else None for r in replies]
        assert kinds.count(codec.ENC_AES) == 1, kinds                 # one sealed answer
        refusals = [reason(codec.unpack_envelope(r).load) for r in replies if r and codec.unpack_envelope(r).enc
                    == codec.ENC_CLEAR]
        assert refusals == ["replayed"] * 5, refusals
        for _ in range(3):  # and later, once more
            assert reason(atk.raw().decode(atk.raw().request(body))) == "replayed"
        time.sleep(0.5)
        assert [t for t, _ in atk.events if t == tag] == [tag]


def test_captured_requests_of_another_minion(lab: Lab) -> None:
    """A2 resends what it recorded on mitm01's path (heartbeats, returns, pillar requests)."""
    captured = []
    for frame in lab.fake.snapshot():
        try:
            env = codec.unpack_envelope(frame)
        except codec.DecodeError:
            continue
        if env.enc == codec.ENC_AES and "sig" not in env.load and b"ctr" in env.load.get("h", b""):
            captured.append(frame)
    assert captured, "the fake master recorded no request"
    with lab_attack(lab, logs=[("master", r"refused sealed request from [0-9.]+ \((replayed|too_old|stale)\)")]) as atk:
        raw = atk.raw(source="127.0.0.20")
        for body in captured[-50:]:
            assert reason(raw.decode(raw.request(body))) in ("replayed", "too_old", "stale", "unknown_session")


def test_replayed_hello_and_client_proof(lab: Lab, need_user: str) -> None:
    user_key = load_client_key(os.path.join(lab.opts["cachedir"], f".{need_user}_key"))
    with lab_attack(lab, logs=[("master", r"auth from 'rogue01' key .*: refused \(replayed\)"),
                               ("master", r"refused publish from [0-9.]+ \(replayed\): client request replayed")]) as atk:
        raw = atk.raw()
        hello = codec.pack_envelope(codec.ENC_CLEAR, start_auth(lab.rogue.identity, "rogue01").load)
        first = raw.decode(raw.request(hello))
        assert first["outcome"] == "accepted"
        for _ in range(3):
            again = raw.decode(raw.request(hello))
            assert (again["outcome"], again["reason"]) == ("refused", "replayed")
        # a proof for a job publisher_acl refuses: the first is refused by the ACL, the copies as replays
        load = publish_load(user_key, need_user, {"tgt": "*", "fun": "cmd.run", "arg": ["id"], "tgt_type": "glob"})
        assert reason(raw.clear(load)) == "acl"
        for _ in range(3):
            assert reason(raw.clear(load)) == "replayed"
        # a proof made ten minutes ago is stale even though it was never used
        old = publish_load(user_key, need_user, {"tgt": "web01", "fun": "test.ping"},
                           now=int(time.time() * 1000) - 600_000)
        assert reason(raw.clear(old)) == "stale"
