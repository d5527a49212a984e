"""Small-order and non-canonical Ed25519 keys and signatures: refused wherever a key is parsed.

The vectors are the eight points of small order (each canonical encoding, as in libsodium's
blocklist and the "Taming the many EdDSAs" paper), their non-canonical encodings, other
non-canonical encodings (y >= p), and signatures with S >= L.  Their orders are re-checked here
with a separate, textbook Edwards-curve implementation so that the module's constants are not
trusted blindly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from runtime import codec
from runtime.crypt.ed25519_strict import L, P, off_curve_problem, public_key_problem, signature_problem
from runtime.crypt.errors import AuthReplyError, HelloError, KeyFileError, PublicationRefused
from runtime.crypt.handshake import answer_hello, finish_auth, start_auth, verify_hello
from runtime.crypt.identity import Identity, public_from_pem, public_to_pem, verify_signature
from runtime.crypt.publish import PublicationReceiver, PublishKey, seal_publication
from runtime.crypt.trust import MasterTrust

# The eight points of small order, canonical encodings (little-endian y, sign bit = x's parity).
SMALL_ORDER = {
    "neutral (order 1)": "0100000000000000000000000000000000000000000000000000000000000000",
    "order 2": "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "order 4, +x": "0000000000000000000000000000000000000000000000000000000000000000",
    "order 4, -x": "0000000000000000000000000000000000000000000000000000000000000080",
    "order 8, y8 +x": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "order 8, y8 -x": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "order 8, -y8 +x": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "order 8, -y8 -x": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
}
# Non-canonical encodings: x = 0 with the sign bit set, and y >= p (y - p is the point meant).
NON_CANONICAL = {
    "neutral, sign bit set": "0100000000000000000000000000000000000000000000000000000000000080",
    "order 2, sign bit set": "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "y = p (order 4)": "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "y = p, sign bit": "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "y = p + 1 (neutral)": "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "y = p + 1, sign bit": "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "y = p + 18": "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
}


# ---------------------------------------------------------------- an independent Edwards curve

_D = -121665 * pow(121666, P - 2, P) % P


def _decode(hexed: str) -> tuple[int, int] | None:
    raw = bytes.fromhex(hexed)
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    y %= P          # the point a non-canonical encoding stands for
    x2 = (y * y - 1) * pow(_D * y * y + 1, P - 2, P) % P
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * pow(2, (P - 1) // 4, P) % P
    if (x * x - x2) % P:
        return None
    if x % 2 != sign:
        x = (P - x) % P
    return x, y


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    (x1, y1), (x2, y2) = a, b
    t = _D * x1 * x2 * y1 * y2 % P
    return ((x1 * y2 + x2 * y1) * pow(1 + t, P - 2, P) % P, (y1 * y2 + x1 * x2) * pow(1 - t, P - 2, P) % P)


def _order(point: tuple[int, int]) -> int:
    acc, n = point, 1
    while acc != (0, 1):
        acc, n = _add(acc, point), n + 1
        assert n <= 8, "not a small-order point"
    return n


def test_the_vectors_are_what_they_claim():
    orders = sorted(_order(_decode(h)) for h in SMALL_ORDER.values())
    assert orders == [1, 2, 4, 4, 8, 8, 8, 8]
    assert len({_decode(h) for h in SMALL_ORDER.values()}) == 8
    for name, hexed in NON_CANONICAL.items():
        y = int.from_bytes(bytes.fromhex(hexed), "little") & ((1 << 255) - 1)
        x_zero_with_sign = bytes.fromhex(hexed)[31] >> 7 and _decode(hexed) is not None and _decode(hexed)[0] == 0
        assert y >= P or x_zero_with_sign or _decode(hexed) is None, name


# ---------------------------------------------------------------- the checks

@pytest.mark.parametrize("name", sorted(SMALL_ORDER))
def test_small_order_keys_are_refused(name):
    raw = bytes.fromhex(SMALL_ORDER[name])
    assert "small order" in public_key_problem(raw)
    assert "small order" in signature_problem(raw + bytes(32))       # as R of a signature
    assert not verify_signature(raw, raw + bytes(32), b"any message")


@pytest.mark.parametrize("name", sorted(NON_CANONICAL))
def test_non_canonical_keys_are_refused(name):
    raw = bytes.fromhex(NON_CANONICAL[name])
    assert public_key_problem(raw) is not None
    assert signature_problem(raw + bytes(32)) is not None


def test_the_universal_forgery_openssl_accepts_is_refused():
    """Why this module exists: OpenSSL verifies (R = neutral, S = 0) under the neutral key for
    every message.  Our verify refuses it, as it refuses every small-order key."""
    neutral = bytes.fromhex(SMALL_ORDER["neutral (order 1)"])
    universal = neutral + bytes(32)
    for message in (b"", b"hello", os.urandom(100)):
        Ed25519PublicKey.from_public_bytes(neutral).verify(universal, message)   # OpenSSL: "valid"
        assert not verify_signature(neutral, universal, message)


def test_off_curve_keys_are_refused():
    # y = 2 is no point of the curve: (y^2 - 1) / (d y^2 + 1) is not a square
    raw = (2).to_bytes(32, "little")
    assert _decode(raw.hex()) is None
    assert "not a point" in off_curve_problem(raw)                     # key files
    with pytest.raises(KeyFileError, match="not a point of the Ed25519 curve"):
        public_from_pem(_pem(raw), "x.pub")
    identity = Identity.generate()                                      # signatures: OpenSSL refuses
    assert not verify_signature(raw, identity.sign(b"m"), b"m")


def test_signatures_with_s_not_below_l_are_refused():
    identity = Identity.generate()
    sig = identity.sign(b"m")
    s = int.from_bytes(sig[32:], "little")
    assert verify_signature(identity.public_raw, sig, b"m")
    for bad_s in (s + L, L, 2 ** 256 - 1, L + 1):
        if bad_s < 2 ** 256:
            forged = sig[:32] + bad_s.to_bytes(32, "little")
            assert "not below the group order" in signature_problem(forged)
            assert not verify_signature(identity.public_raw, forged, b"m")


def test_honest_keys_and_signatures_pass():
    for _ in range(200):
        identity = Identity.generate()
        assert public_key_problem(identity.public_raw) is None
        sig = identity.sign(os.urandom(16))
        assert signature_problem(sig) is None


def _pem(raw: bytes) -> bytes:
    return Ed25519PublicKey.from_public_bytes(raw).public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.mark.parametrize("hexed", [*SMALL_ORDER.values(), *NON_CANONICAL.values()])
def test_key_files_holding_weak_keys_are_refused(tmp_path, hexed):
    raw = bytes.fromhex(hexed)
    with pytest.raises(KeyFileError, match=r"x\.pub: refused: "):
        public_from_pem(_pem(raw), "x.pub")
    with pytest.raises(ValueError):
        public_to_pem(raw)
    # a minion's trusted master key file
    pki = tmp_path / "pki"
    pki.mkdir(mode=0o700)
    (pki / "minion_master.pub").write_bytes(_pem(raw))
    with pytest.raises(KeyFileError, match="minion_master.pub: refused"):
        MasterTrust(str(pki))


def _universal_hello(minion_id: str, pub: bytes) -> dict:
    attempt = start_auth(Identity.generate(), minion_id)
    return dict(attempt.load, pub=pub, sig=pub + bytes(32))


@pytest.mark.parametrize("hexed", [*SMALL_ORDER.values(), *NON_CANONICAL.values()])
def test_hellos_with_weak_keys_are_refused_and_nothing_is_stored(fleet, hexed):
    pub = bytes.fromhex(hexed)
    decision = fleet.auth.handle(_universal_hello("ghost", pub))
    assert (decision.outcome, decision.reason) == ("refused", "bad_key")
    assert decision.event() is None              # no salt/auth event for an unverified hello
    assert fleet.keys.list_keys() == {"minions": [], "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    with pytest.raises(HelloError) as refused:
        verify_hello(_universal_hello("ghost", pub))
    assert refused.value.reason == "bad_key"


def test_weak_key_planted_in_the_key_store_is_refused(fleet):
    (Path(fleet.keys.pki_dir) / "minions" / "ghost").write_bytes(_pem(bytes.fromhex(SMALL_ORDER["neutral (order 1)"])))
    decision = fleet.auth.handle(_universal_hello("ghost", bytes.fromhex(SMALL_ORDER["neutral (order 1)"])))
    assert decision.outcome == "refused" and decision.session is None
    with pytest.raises(KeyFileError, match="small order"):
        fleet.keys.lookup("ghost")


@pytest.mark.parametrize("hexed", [SMALL_ORDER["neutral (order 1)"], SMALL_ORDER["order 8, y8 +x"],
                                   NON_CANONICAL["y = p + 1 (neutral)"]])
def test_a_master_answering_with_a_weak_key_is_never_trusted(fleet, tmp_path, hexed):
    """A fake master replies with a small-order key and the universal signature: the minion
    refuses it and does not remember it (trust on first use would otherwise pin it)."""
    weak = bytes.fromhex(hexed)
    minion = Identity.generate()
    attempt = start_auth(minion, "web1")
    reply, _ = answer_hello(fleet.master, verify_hello(attempt.load), "pending")
    reply = dict(reply, master_pub=weak, sig=weak + bytes(32))
    trust = fleet.trust("fresh")
    with pytest.raises(AuthReplyError) as refused:
        finish_auth(attempt, reply, trust)
    assert refused.value.reason == "bad_master_key"
    assert trust.known is None and not (tmp_path / "pki-fresh" / "minion_master.pub").exists()


def test_publications_signed_universally_are_refused():
    neutral = bytes.fromhex(SMALL_ORDER["neutral (order 1)"])
    pkey = PublishKey.generate(1)
    body = seal_publication(Identity.generate(), pkey, 1, {"fun": "cmd.run", "arg": ["id"]})
    receiver = PublicationReceiver(neutral, pkey)
    env = codec.unpack_envelope(body)
    forged = codec.pack_envelope(codec.ENC_AES, dict(env.load, sig=neutral + bytes(32)))
    with pytest.raises(PublicationRefused, match="not signed by the trusted master key"):
        receiver.open(forged)
