"""Fuzzing the auth handshake (issue 16): hello, answer and finish with mutated keys, signatures,
nonces, timestamps, ids and ephemeral keys (hypothesis), beside the decoder and dispatcher
fuzzers of ``test_fuzz.py``.

Targets, each against real objects (key store and session store on disk, the master's
``AuthService``, the minion's ``finish_auth`` with a trust store that records what it is asked
to remember):

* **hello -> AuthService.handle**: a genuine hello of an accepted minion (or of a new key), with
  any subset of its fields replaced by an adversarial value: small-order and non-canonical keys,
  the "universal" signature, S + L, small-order R, replayed or malformed nonces, stale, future or
  pre-start timestamps, unusable ids, small-order X25519 keys.  Never an exception; a session only
  for an unmodified hello whose nonce was never claimed; no weak key ever stored; no ``salt/auth``
  event for an id that cannot name a key.
* **answer -> finish_auth**: the master's genuine reply (accepted or pending) with fields
  replaced the same way (master key, signature, hello hash, nonce, session id, ephemeral key,
  sealed grant, time, outcome).  Only ``CryptoError`` escapes; a session only for the unmodified
  reply; the trust store is never asked to remember a weak key.

Runs ``SALTPAN_FUZZ_SECONDS`` x 0.5 (6 s by default) in ``make test``; longer by hand::

    SALTPAN_FUZZ_SECONDS=600 .venv/bin/python -m pytest -q -s tests/security/test_fuzz_handshake.py

and prints how many handshakes each target ran.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.crypt.ed25519_strict import L, public_key_problem
from runtime.crypt.errors import CryptoError
from runtime.crypt.handshake import (
    AuthGrant,
    _hello_transcript,
    answer_hello,
    finish_auth,
    now_ms,
    start_auth,
    verify_hello,
)
from runtime.crypt.identity import Identity, public_from_pem
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.keys import STATUSES, id_problem
from runtime.master.store.file_keys import FileKeyStore
from runtime.master.store.sqlite_sessions import SQLiteSessionStore
from tests.crypto.test_ed25519_strict import NON_CANONICAL, SMALL_ORDER
from tests.security.test_fuzz import BUDGET, SETTINGS, run_for

WEAK_KEYS = [bytes.fromhex(h) for h in (*SMALL_ORDER.values(), *NON_CANONICAL.values())]
SMALL_X25519 = [bytes(32), bytes([1]) + bytes(31),
                bytes.fromhex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
                bytes.fromhex("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
                bytes.fromhex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")]
BAD_IDS = ["../x", "a/b", "a\\b", "..", ".", ".tmp-x", "x\ny", "x\x00y", "", "x" * 256, 5, None, b"fuzz01"]
executions: dict[str, int] = {"hello": 0, "answer": 0}


@dataclass
class Master:
    base: Path
    identity: Identity = field(default_factory=Identity.generate)
    minion: Identity = field(default_factory=Identity.generate)

    def __post_init__(self) -> None:
        self.keys = FileKeyStore(str(self.base / "pki"), max_pending=30)
        self.store = SQLiteSessionStore(str(self.base / "sessions.sqlite"))
        self.store.reset()
        self.keys.admit("fuzz01", self.minion.public_raw, auto_accept=True)
        self.auth = AuthService(self.identity, self.keys, self.store, AuthSettings())

    def stored_keys(self) -> Iterator[bytes]:
        for status in STATUSES:
            for path in (self.base / "pki" / status).iterdir():
                if not path.name.startswith(".tmp-"):
                    yield public_from_pem(path.read_bytes(), str(path))   # refuses weak keys


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Master:
    made = Master(tmp_path_factory.mktemp("fuzz-handshake"))
    yield made
    made.store.close()


def flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8 % len(out)] ^= 1 << (bit % 8)
    return bytes(out)


def sig_variants(sig: bytes, pub: bytes) -> st.SearchStrategy[bytes]:
    s = int.from_bytes(sig[32:], "little")
    return st.one_of(
        st.sampled_from([pub + bytes(32), sig[:32] + (s + L).to_bytes(32, "little"),
                         sig[:32] + L.to_bytes(32, "little"), bytes(64), sig[:63], sig + b"\0",
                         *(w + sig[32:] for w in WEAK_KEYS[:4])]),
        st.integers(0, 511).map(lambda bit: flip(sig, bit)),
        st.binary(min_size=64, max_size=64))


# ---------------------------------------------------------------- hello -> AuthService.handle

HELLO_FIELDS = ("pub", "sig", "nonce", "ts", "id", "eph", "v", "cmd")


def hello_mutations(genuine: dict[str, Any], claimed: bytes, started: int) -> st.SearchStrategy[dict[str, Any]]:
    now = now_ms()
    other = Identity.generate().public_raw
    values: dict[str, st.SearchStrategy[Any]] = {
        "pub": st.one_of(st.sampled_from(WEAK_KEYS), st.sampled_from(WEAK_KEYS[:2]),
                         st.sampled_from([other, genuine["pub"][:31], b""]), st.binary(min_size=32, max_size=32)),
        "sig": sig_variants(genuine["sig"], genuine["pub"]),
        "nonce": st.one_of(st.sampled_from([claimed, bytes(32), genuine["nonce"][:16], None]),
                           st.binary(min_size=32, max_size=32)),
        "ts": st.sampled_from([now - 301_000, now + 301_000, started - 1, 0, -1, 2 ** 62, "now", 1.5, True]),
        "id": st.sampled_from(BAD_IDS + ["fuzz02", "web01"]),
        "eph": st.one_of(st.sampled_from([*SMALL_X25519, genuine["eph"][:31]]), st.binary(min_size=32,
                                                                                          max_size=32)),
        "v": st.sampled_from([0, 2, "1", None, True]),
        "cmd": st.sampled_from(["_auth ", "auth", None, 1]),
    }
    return st.fixed_dictionaries({}, optional=values)


def resign(load: dict[str, Any], identity: Identity) -> dict[str, Any]:
    """Sign a mutated hello again with ``identity`` where the fields still allow it (the attacker
    holds a key of its own and signs whatever it likes)."""
    try:
        transcript = _hello_transcript(load["v"], load["id"], load["pub"], load["eph"], load["nonce"], load["ts"])
    except (TypeError, ValueError, OverflowError):
        return load
    return dict(load, sig=identity.sign(transcript))


def test_fuzz_hellos(master: Master) -> None:
    claimed = start_auth(master.minion, "fuzz01")
    assert master.auth.handle(claimed.load).outcome == "accepted"     # its nonce is now claimed
    attacker = Identity.generate()

    @SETTINGS
    @given(st.data(), st.sampled_from(["holder", "holder-new-id", "attacker-resigned"]))
    def hello(data: st.DataObject, who: str) -> None:
        identity = master.minion if who.startswith("holder") else attacker
        minion_id = "fuzz01" if who == "holder" else f"fuzz-{os.urandom(3).hex()}"
        genuine = start_auth(identity, minion_id).load
        changes = data.draw(hello_mutations(genuine, claimed.nonce, master.store.started_ms()))
        load = dict(genuine, **changes)
        if who == "attacker-resigned" and "sig" not in changes:
            load = resign(load, attacker)
        if data.draw(st.sampled_from([False, True, True])) and isinstance(load["pub"], bytes) and len(load["pub"]) == 32:
            load["sig"] = load["pub"] + bytes(32)           # the universal signature, for whatever key
            changes["sig"] = load["sig"]
        decision = master.auth.handle(load)                 # never raises
        executions["hello"] += 1
        modified = {k for k, v in changes.items() if genuine.get(k) != v}
        if decision.outcome == "accepted" or decision.session is not None:
            # only the key's holder, for its accepted id, with the hello exactly as it signed it
            assert (who, modified, decision.outcome) == ("holder", set(), "accepted"), (who, modified)
        if isinstance(load.get("id"), str) and id_problem(load["id"]) is not None:
            assert decision.event() is None
        if "pub" in modified and public_key_problem(load["pub"]) is not None:
            assert decision.outcome == "refused" and decision.session is None
        if load.get("nonce") == claimed.nonce:
            assert decision.session is None
        for _ in master.stored_keys():                      # every stored key is usable (parse refuses weak ones)
            pass

    run_for(BUDGET * 0.25, hello)


# ---------------------------------------------------------------- answer -> finish_auth

class RecordingTrust:
    def __init__(self) -> None:
        self.checked: list[bytes] = []
        self.remembered: list[bytes] = []

    def check(self, master_pub: bytes) -> None:
        self.checked.append(master_pub)

    def remember(self, master_pub: bytes) -> None:
        self.remembered.append(master_pub)


def reply_mutations(genuine: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    other = Identity.generate().public_raw
    bits = st.integers(0, 1023)
    sealed = genuine["sealed"] or b"\0" * 48
    values: dict[str, st.SearchStrategy[Any]] = {
        "master_pub": st.one_of(st.sampled_from(WEAK_KEYS), st.sampled_from(WEAK_KEYS[:2]),
                                st.sampled_from([other, b"", None]), st.binary(min_size=32, max_size=32)),
        "sig": sig_variants(genuine["sig"], genuine["master_pub"]),
        "hello_hash": st.one_of(st.just(bytes(32)), bits.map(lambda b: flip(genuine["hello_hash"], b))),
        "nonce": st.one_of(st.just(os.urandom(32)), bits.map(lambda b: flip(genuine["nonce"], b))),
        "sid": st.sampled_from([None, bytes(16), os.urandom(16), b"x"]),
        "eph": st.one_of(st.sampled_from([*SMALL_X25519, None, b""]), st.binary(min_size=32, max_size=32)),
        "sealed": st.one_of(st.sampled_from([None, b"", sealed[:-1]]), bits.map(lambda b: flip(sealed, b))),
        "now": st.sampled_from([0, -1, 2 ** 62, 2 ** 64, "now", genuine["now"] + 1]),
        "outcome": st.sampled_from(["accepted", "pending", "rejected", "denied", "refused", "ACCEPTED", None]),
        "reason": st.sampled_from(["", "x", None]),
        "id": st.sampled_from(["fuzz01", "other", None]),
        "v": st.sampled_from([0, 2, None]),
    }
    return st.fixed_dictionaries({}, optional=values)


def test_fuzz_answers(master: Master) -> None:
    def grant(keys: Any) -> AuthGrant:
        return AuthGrant(5.0, 1, b"k" * 32, {})

    @SETTINGS
    @given(st.data(), st.sampled_from(["accepted", "pending", "refused"]))
    def answer(data: st.DataObject, outcome: str) -> None:
        attempt = start_auth(master.minion, "fuzz01")
        hello = verify_hello(attempt.load)
        genuine, _ = answer_hello(master.identity, hello, outcome, grant=grant if outcome == "accepted" else None)
        changes = data.draw(reply_mutations(genuine))
        reply = dict(genuine, **changes)
        if data.draw(st.sampled_from([False, True, True])) and isinstance(reply["master_pub"], bytes) \
                and len(reply["master_pub"]) == 32:
            reply["sig"] = changes["sig"] = reply["master_pub"] + bytes(32)   # universal signature
        modified = {k for k, v in changes.items() if genuine.get(k) != v}
        trust = RecordingTrust()
        executions["answer"] += 1
        try:
            result = finish_auth(attempt, reply, trust)
        except CryptoError:
            assert modified, "the genuine reply was refused"
            for key in trust.remembered:
                assert public_key_problem(key) is None
            return
        assert not modified, f"a reply with {sorted(modified)} changed was taken as {result.outcome}"
        assert result.outcome == outcome and (result.session is not None) == (outcome == "accepted")
        assert trust.remembered == [master.identity.public_raw]

    run_for(BUDGET * 0.25, answer)


def test_report_executions(capsys: pytest.CaptureFixture[str]) -> None:
    """Say how many handshakes the targets above ran (visible with ``-s``)."""
    with capsys.disabled():
        print(f"\nhandshake fuzz: {executions['hello']} hellos, {executions['answer']} answers "
              f"(SALTPAN_FUZZ_SECONDS={BUDGET:g})")
    assert executions["hello"] > 0 and executions["answer"] > 0
