"""Keys nobody holds (issue 16, item 1; SECURITY.md classes 2 and 7).

OpenSSL verifies the signature (R = neutral point, S = 0) under the neutral point for every
message.  An independent attack suite registered such a key in a hello, had it accepted, and
then anyone could open sessions as that minion.  Every small-order point and every
non-canonical encoding is now refused where keys are parsed: hellos (``bad_key``, nothing
stored, no ``salt/auth`` event), master keys shown to a minion (``bad_master_key``, never
remembered), key files; signatures with S >= L are refused too.
"""

from __future__ import annotations

import time
from pathlib import Path

from runtime.crypt.ed25519_strict import L
from runtime.crypt.handshake import start_auth
from runtime.crypt.identity import Identity
from tests.crypto.test_ed25519_strict import NON_CANONICAL, SMALL_ORDER, _pem
from tests.integration.cluster import wait_for
from tests.security.guard import lab_attack
from tests.security.lab import ROGUE, Lab

BAD_KEY_LOG = r"auth from <unparsed hello>: refused \(bad_key\): hello key refused: the public key is"


def universal_hello(minion_id: str, pub: bytes) -> dict:
    """A hello for ``minion_id`` carrying ``pub`` and the signature (R = pub, S = 0)."""
    return dict(start_auth(Identity.generate(), minion_id).load, pub=pub, sig=pub + bytes(32))


def auth_events(atk, ids: set[str]) -> list:
    """salt/auth events naming ``ids`` other than their real minions' own (pend01, a real daemon,
    keeps authenticating with its stored key during the attack)."""
    time.sleep(0.3)
    stored = {value.decode(errors="replace") for value in atk.lab.key_store().values()}
    return [(tag, data) for tag, data in atk.events if tag.startswith("salt/auth") and data.get("id") in ids
            and data.get("pub") not in stored]


def test_small_order_and_non_canonical_keys_in_hellos(lab: Lab) -> None:
    """The issue's instance (the neutral point) and its siblings: the seven other small-order
    points and seven non-canonical encodings, each for a new id, an accepted id and a pending
    id, from three source addresses.  All refused ``bad_key``; the key store is unchanged (the
    guard checks it byte for byte) and no ``salt/auth`` event names them."""
    targets = ("ghost01", "web01", "pend01")
    with lab_attack(lab, logs=[("master", BAD_KEY_LOG)]) as atk:
        clients = [atk.raw(source=f"127.0.0.{30 + i}") for i in range(3)]
        for n, (name, hexed) in enumerate(sorted({**SMALL_ORDER, **NON_CANONICAL}.items())):
            for minion_id in targets:
                reply = clients[n % 3].clear(universal_hello(minion_id, bytes.fromhex(hexed)))
                assert (reply["outcome"], reply["reason"]) == ("refused", "bad_key"), (name, minion_id, reply)
                assert reply["sid"] is None and reply["sealed"] is None
        assert auth_events(atk, set(targets)) == []
    assert "ghost01" not in {m for ids in lab.keys().values() for m in ids}


def test_malleated_signature_of_a_withheld_hello(lab: Lab) -> None:
    """A2 withholds a genuine hello and sends it with S + L (or S = L, or R swapped for a
    small-order point): refused, and the nonce is not burnt, so the genuine hello still works."""
    with lab_attack(lab, logs=[("master", r"auth from <unparsed hello> .*refused \(bad_signature\)|"
                                          r"auth from <unparsed hello>: refused \(bad_signature\)")]) as atk:
        raw = atk.raw()
        attempt = start_auth(lab.rogue.identity, ROGUE)
        sig = attempt.load["sig"]
        s = int.from_bytes(sig[32:], "little")
        forged = [sig[:32] + (s + L).to_bytes(32, "little"), sig[:32] + L.to_bytes(32, "little"),
                  bytes.fromhex(SMALL_ORDER["order 8, y8 +x"]) + sig[32:], bytes(32) + sig[32:]]
        for bad in forged:
            reply = raw.clear(dict(attempt.load, sig=bad))
            assert (reply["outcome"], reply["reason"]) == ("refused", "bad_signature"), reply
        genuine = raw.clear(attempt.load)
        assert genuine["outcome"] == "accepted"


def test_small_order_key_planted_in_the_key_store(lab: Lab) -> None:
    """Someone with write access to pki_dir (or an old bug) left a small-order key as an
    accepted minion's key: hellos signed 'universally' for it are refused, no session is made,
    and the operator can still see why and delete it."""
    neutral = bytes.fromhex(SMALL_ORDER["neutral (order 1)"])
    planted = Path(lab.opts["pki_dir"]) / "minions" / "ghost02"
    planted.write_bytes(_pem(neutral))
    planted.chmod(0o600)
    try:
        with lab_attack(lab, logs=[("master", BAD_KEY_LOG)]) as atk:
            reply = atk.raw().clear(universal_hello("ghost02", neutral))
            assert (reply["outcome"], reply["reason"]) == ("refused", "bad_key")
            finger = lab.cl.key("-f", "ghost02")
            assert "unusable key file" in finger.stdout and "small order" in finger.stdout, finger
            assert "Traceback" not in finger.stderr
            assert auth_events(atk, {"ghost02"}) == []
    finally:
        assert lab.cl.key("-d", "ghost02", "-y").returncode == 0
    assert not planted.exists()


def test_a_master_with_a_small_order_key_is_never_trusted(lab: Lab) -> None:
    """A brand-new minion (no master key cached, no master_finger) meets a fake master that
    answers with the neutral point as its key and the universal signature: trust on first use
    must not pin it; the minion keeps retrying and writes no minion_master.pub."""
    assert lab.fake is not None
    minion_id = "fresh01"
    lab.cl.add_minion(minion_id, master_port=lab.fake.ret_port, publish_port=lab.fake.pub_port,
                      refusal_log_interval=1.0)
    daemon = lab.cl.minions[minion_id]
    try:
        with lab_attack(lab, allowed_writes=[f"{minion_id}*", "fresh01.*"],
                        logs=[(minion_id, r"master key refused: the public key is a point of small order")]) as atk:
            lab.fake.set_mode("weak_key")
            hellos = lab.fake.hellos
            daemon.start()
            wait_for(lambda: lab.fake.hellos >= hellos + 3, 30, what=f"{minion_id} retrying against the fake master")
            assert daemon.alive()
            daemon.stop()
            assert not list(Path(lab.base, minion_id).rglob("minion_master.pub"))
            assert "authenticated with the master" not in daemon.log()
            atk.record("fresh01 log", daemon.log())
    finally:
        lab.fake.set_mode("relay")
        daemon.stop()
        del lab.cl.minions[minion_id]
    assert minion_id not in {m for ids in lab.keys().values() for m in ids}


def test_small_order_ephemeral_keys(lab: Lab) -> None:
    """The sibling in the key exchange: an accepted minion's correctly signed hello whose
    X25519 key is of small order (the shared secret would be all zeros, known to everyone):
    refused ``bad_ephemeral_key``, no session."""
    small_x25519 = [bytes(32), bytes([1]) + bytes(31),
                    bytes.fromhex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
                    bytes.fromhex("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
                    bytes.fromhex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")]
    from runtime.crypt import aead
    from runtime.crypt.handshake import _hello_transcript

    with lab_attack(lab, logs=[("master", r"auth from 'rogue01' key .*: refused \(bad_ephemeral_key\)")]) as atk:
        raw = atk.raw()
        for eph in small_x25519:
            load = dict(start_auth(lab.rogue.identity, ROGUE).load, eph=eph)
            load["sig"] = lab.rogue.identity.sign(_hello_transcript(aead.PROTOCOL_VERSION, ROGUE, load["pub"], eph,
                                                                    load["nonce"], load["ts"]))
            reply = raw.clear(load)
            assert (reply["outcome"], reply["reason"]) == ("refused", "bad_ephemeral_key"), reply
            assert reply["sealed"] is None
    lab.ensure_rogue()
