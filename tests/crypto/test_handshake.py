"""The auth handshake: proof of possession, signed replies for every outcome, bound to the hello."""

from __future__ import annotations

import copy
import hashlib

import pytest

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.errors import AuthReplyError, HelloError, MasterKeyMismatch
from runtime.crypt.handshake import (
    AuthGrant,
    answer_hello,
    finish_auth,
    now_ms,
    start_auth,
    verify_hello,
)
from runtime.crypt.identity import Identity


class TrustAll:
    def __init__(self):
        self.remembered = []

    def check(self, master_pub):
        pass

    def remember(self, master_pub):
        self.remembered.append(master_pub)


GRANT = AuthGrant(5.0, 3, b"k" * 32, {"x": 1})


def flip(value: bytes, index: int = 0) -> bytes:
    return value[:index] + bytes([value[index] ^ 1]) + value[index + 1:]


def test_accepted_round_trip_derives_matching_directional_keys():
    master, minion = Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    hello = verify_hello(codec.unpack(codec.pack(attempt.load)))
    reply, server_keys = answer_hello(master, hello, "accepted", grant=GRANT)
    trust = TrustAll()
    result = finish_auth(attempt, codec.unpack(codec.pack(reply)), trust)
    assert result.outcome == "accepted"
    assert result.grant == GRANT
    assert result.session.c2s == server_keys.c2s and result.session.s2c == server_keys.s2c
    assert result.session.sid == server_keys.sid and result.session.minion_id == "web1"
    assert result.session.c2s != result.session.s2c
    assert trust.remembered == [master.public_raw]
    assert abs(result.clock_offset_ms) < 5000


def test_two_sessions_never_share_keys():
    master, minion = Identity.generate(), Identity.generate()
    keys = set()
    for _ in range(3):
        attempt = start_auth(minion, "web1")
        reply, sk = answer_hello(master, verify_hello(attempt.load), "accepted", grant=GRANT)
        keys.add(sk.c2s)
        assert attempt.load["nonce"] not in keys
    assert len(keys) == 3


@pytest.mark.parametrize("outcome", ["pending", "rejected", "denied", "refused"])
def test_every_outcome_is_signed_and_bound(outcome):
    master, minion = Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    reply, keys = answer_hello(master, verify_hello(attempt.load), outcome, reason="why")
    assert keys is None and reply["sid"] is None and reply["sealed"] is None
    result = finish_auth(attempt, reply, TrustAll())
    assert (result.outcome, result.reason, result.session) == (outcome, "why", None)
    forged = dict(reply, outcome="accepted" if outcome != "accepted" else "pending")
    with pytest.raises(AuthReplyError):
        finish_auth(attempt, forged, TrustAll())
    pending_as_rejected = dict(reply, reason="other")
    with pytest.raises(AuthReplyError, match="signature"):
        finish_auth(attempt, pending_as_rejected, TrustAll())


@pytest.mark.parametrize("field", ["id", "pub", "eph", "nonce", "ts", "sig"])
def test_tampered_hello_is_refused(field):
    attempt = start_auth(Identity.generate(), "web1")
    load = dict(attempt.load)
    if field == "id":
        load["id"] = "web2"
    elif field == "ts":
        load["ts"] += 1
    else:
        load[field] = flip(load[field], 5)
    with pytest.raises(HelloError) as err:
        verify_hello(load)
    assert err.value.reason == "bad_signature"
    assert err.value.hello is not None  # so the master can still answer with a signed refusal


def test_hello_signed_by_another_key_is_refused():
    attempt = start_auth(Identity.generate(), "web1")
    load = dict(attempt.load, pub=Identity.generate().public_raw)
    with pytest.raises(HelloError) as err:
        verify_hello(load)
    assert err.value.reason == "bad_signature"


@pytest.mark.parametrize("mutate", [
    lambda load: load.pop("sig"),
    lambda load: load.update(extra=1),
    lambda load: load.update(pub=b"short"),
    lambda load: load.update(id=""),
    lambda load: load.update(id="x" * 256),
    lambda load: load.update(id=5),
    lambda load: load.update(ts=True),
    lambda load: load.update(ts=-1),
    lambda load: load.update(cmd="publish"),
])
def test_malformed_hello(mutate):
    load = dict(start_auth(Identity.generate(), "web1").load)
    mutate(load)
    with pytest.raises(HelloError) as err:
        verify_hello(load)
    assert err.value.reason == "malformed"
    assert err.value.hello is None


def test_other_protocol_version():
    load = dict(start_auth(Identity.generate(), "web1").load, v=2)
    with pytest.raises(HelloError) as err:
        verify_hello(load)
    assert err.value.reason == "unsupported_version"


def test_clock_skew_refusal_carries_master_time_and_retry_with_offset_succeeds():
    master, minion = Identity.generate(), Identity.generate()
    master_clock = now_ms() + 3_600_000  # the master is an hour ahead
    attempt = start_auth(minion, "web1")
    with pytest.raises(HelloError) as err:
        verify_hello(attempt.load, now=master_clock)
    assert err.value.reason == "clock_skew"
    reply, _ = answer_hello(master, err.value.hello, "refused", reason="clock_skew", now=master_clock)
    result = finish_auth(attempt, reply, TrustAll())
    assert result.reason == "clock_skew"
    assert 3_590_000 < result.clock_offset_ms < 3_610_000
    retry = start_auth(minion, "web1", clock_offset_ms=result.clock_offset_ms)
    assert verify_hello(retry.load, now=master_clock).verified


def test_reply_to_another_hello_is_refused():
    master, minion = Identity.generate(), Identity.generate()
    first, second = start_auth(minion, "web1"), start_auth(minion, "web1")
    reply, _ = answer_hello(master, verify_hello(first.load), "accepted", grant=GRANT)
    with pytest.raises(AuthReplyError, match="another hello"):
        finish_auth(second, reply, TrustAll())
    # even with the nonce and hash copied in, the signature covers the original binding
    patched = dict(reply, nonce=second.nonce, hello_hash=hashlib.sha256(second.hello_transcript).digest())
    with pytest.raises(AuthReplyError, match="signature"):
        finish_auth(second, patched, TrustAll())


@pytest.mark.parametrize("field", ["sig", "sealed", "eph", "sid", "master_pub", "now"])
def test_tampered_accepted_reply_is_refused(field):
    master, minion = Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    reply, _ = answer_hello(master, verify_hello(attempt.load), "accepted", grant=GRANT)
    bad = copy.copy(reply)
    bad[field] = bad[field] + 1 if field == "now" else flip(bad[field], 3)
    with pytest.raises(AuthReplyError):
        finish_auth(attempt, bad, TrustAll())


def test_reply_signed_by_another_master_is_refused():
    master, impostor, minion = Identity.generate(), Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    hello = verify_hello(attempt.load)
    reply, _ = answer_hello(impostor, hello, "accepted", grant=GRANT)
    reply["master_pub"] = master.public_raw  # claim to be the real master
    with pytest.raises(AuthReplyError, match="signature"):
        finish_auth(attempt, reply, TrustAll())


def test_unsigned_error_reply_is_not_trusted():
    attempt = start_auth(Identity.generate(), "web1")
    with pytest.raises(AuthReplyError) as err:
        finish_auth(attempt, codec.error_load("malformed", "bad"), TrustAll())
    assert err.value.reason == "unsigned_refusal"


def test_low_order_ephemeral_key_is_refused_not_used():
    master, minion = Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    # an all-zero X25519 point gives an all-zero shared secret: the master must not derive keys
    load = dict(attempt.load, eph=b"\x00" * 32)
    transcript = aead.transcript("hello", 1, "web1", minion.public_raw, load["eph"], load["nonce"], load["ts"])
    load["sig"] = minion.sign(transcript)
    hello = verify_hello(load)
    called = []
    reply, keys = answer_hello(master, hello, "accepted", grant=lambda k: called.append(k) or GRANT)
    assert keys is None and reply["outcome"] == "refused" and reply["reason"] == "bad_ephemeral_key"
    assert called == []


def test_grant_callable_sees_the_session_keys_first():
    master, minion = Identity.generate(), Identity.generate()
    attempt = start_auth(minion, "web1")
    seen = []
    reply, keys = answer_hello(master, verify_hello(attempt.load), "accepted",
                               grant=lambda k: seen.append(k) or GRANT)
    assert seen == [keys]


def test_unverified_hello_cannot_be_accepted():
    master = Identity.generate()
    attempt = start_auth(Identity.generate(), "web1")
    bad = dict(attempt.load, sig=flip(attempt.load["sig"]))
    with pytest.raises(HelloError) as err:
        verify_hello(bad)
    with pytest.raises(ValueError):
        answer_hello(master, err.value.hello, "accepted", grant=GRANT)


def test_master_key_mismatch_is_raised_before_trusting(tmp_path):
    from runtime.crypt.trust import MasterTrust
    master, impostor, minion = Identity.generate(), Identity.generate(), Identity.generate()
    trust = MasterTrust(str(tmp_path))
    attempt = start_auth(minion, "web1")
    finish_auth(attempt, answer_hello(master, verify_hello(attempt.load), "pending")[0], trust)
    attempt = start_auth(minion, "web1")
    with pytest.raises(MasterKeyMismatch):
        finish_auth(attempt, answer_hello(impostor, verify_hello(attempt.load), "accepted", grant=GRANT)[0], trust)
