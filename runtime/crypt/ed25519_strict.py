"""Strict Ed25519 encodings: the keys and signatures OpenSSL lets through and saltpan refuses.

OpenSSL (through ``cryptography``) verifies Ed25519 as RFC 8032 allows, cofactorless and without
looking at the public key's order.  So a *small-order* public key is accepted: with the neutral
point as the key, the signature (R = neutral point, S = 0) verifies for every message.  Such a
key has no private key, and anyone can sign for it; a master that stored it as a minion key
would let every peer authenticate as that minion.  libsodium refuses these keys; we do the same
before any signature is checked, wherever a key is parsed (hellos, key files, the master key a
minion is shown, publications).

Refused public keys (:func:`public_key_problem`, a few integer comparisons):

* encodings with y >= p (non-canonical: two encodings of one point);
* the eight points of small order (order 1, 2, 4 and 8), whatever the sign bit (this covers
  x = 0 with the sign bit set, the non-canonical "negative zero": only y = +-1 give x = 0).

Key files are also checked to hold a point of the curve at all (:func:`off_curve_problem`, one
modular exponentiation); on the hot path OpenSSL's verification refuses such keys by itself.

Refused signatures (:func:`signature_problem`): S >= L (non-canonical, malleable: S + L verifies
too where the library does not check), and an R that is non-canonical or of small order.

A key with a small-order component added to a prime-order point (a "mixed-order" key) is not
refused: only the holder of the prime-order part's secret can sign for it, so it is that holder's
key (checking the full order would cost a scalar multiplication in Python per new key).
"""

from __future__ import annotations

from functools import lru_cache

P = 2 ** 255 - 19
L = 2 ** 252 + 27742317777372353535851937790883648493   # order of the prime subgroup
D = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)
_Y_MASK = (1 << 255) - 1

# y coordinates of the eight points of small order: the neutral point (0, 1); (0, -1) of order 2;
# (+-sqrt(-1), 0) of order 4; four points of order 8 with y = +-Y8.
Y8 = 2707385501144840649318225287225658788936804267575313519463743609750303402022
SMALL_ORDER_Y = frozenset({1, P - 1, 0, Y8, P - Y8})


def _recover_x(y: int, sign: int) -> int | None:
    """x of the curve point with this y and sign bit, or None when there is none (RFC 8032 5.1.3)."""
    yy = y * y % P
    u = (yy - 1) % P
    v = (D * yy + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    vxx = v * x * x % P
    if vxx == (-u) % P:
        x = x * SQRT_M1 % P
    elif vxx != u:
        return None
    if x == 0 and sign:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def _point_problem(raw: bytes, what: str) -> str | None:
    y = int.from_bytes(raw, "little") & _Y_MASK
    if y >= P:
        return f"{what} is a non-canonical encoding (y >= p)"
    if y in SMALL_ORDER_Y:
        return f"{what} is a point of small order (no private key exists for it: anyone could sign as it)"
    return None


def public_key_problem(raw: bytes) -> str | None:
    """Why ``raw`` is not an Ed25519 public key saltpan accepts (non-canonical or of small
    order), or None when it is."""
    if not isinstance(raw, bytes) or len(raw) != 32:
        return "an Ed25519 public key is 32 bytes"
    return _point_problem(raw, "the public key")


@lru_cache(maxsize=1024)
def off_curve_problem(raw: bytes) -> str | None:
    """:func:`public_key_problem`, and also "not a point of the curve" (for key files)."""
    problem = public_key_problem(raw)
    if problem is None and _recover_x(int.from_bytes(raw, "little") & _Y_MASK, raw[31] >> 7) is None:
        return "the public key is not a point of the Ed25519 curve"
    return problem


def signature_problem(signature: bytes) -> str | None:
    """Why ``signature`` is refused before verification (S >= L, R non-canonical or of small
    order), or None."""
    if not isinstance(signature, bytes) or len(signature) != 64:
        return "an Ed25519 signature is 64 bytes"
    if int.from_bytes(signature[32:], "little") >= L:
        return "the signature's S is not below the group order (non-canonical)"
    return _point_problem(signature[:32], "the signature's R")
