"""The one cipher suite of protocol version 1, and unambiguous transcript encoding.

Suite ``saltpan/1``: Ed25519 signatures, X25519 key agreement, HKDF-SHA256, ChaCha20-Poly1305
(256-bit key, 96-bit nonce, 128-bit tag).  Nonces are never random: each key belongs to one
direction of one session (or one publish epoch) and the nonce is ``domain (4 bytes) || counter
(8 bytes, big endian)``, so a nonce repeats only if a counter does, which the senders prevent.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from runtime.crypt.errors import BadMessage
from runtime.crypt.transcript import transcript as transcript  # clients import it alone

PROTOCOL_VERSION = 1
SUITE = "saltpan/1: Ed25519, X25519, HKDF-SHA256, ChaCha20-Poly1305"
KEY_SIZE = 32
TAG_SIZE = 16
MAX_COUNTER = 2 ** 64 - 1

# Nonce domains: one per key use, so a key could never be used twice under the same nonce even
# if two uses shared a key by mistake.
DOMAIN_C2S = b"c2s\x00"   # minion -> master requests (session key c2s)
DOMAIN_S2C = b"s2c\x00"   # master -> minion replies (session key s2c)
DOMAIN_PUB = b"pub\x00"   # publications (publish key of an epoch)


def nonce(domain: bytes, counter: int) -> bytes:
    if not 0 <= counter <= MAX_COUNTER:
        raise ValueError(f"nonce counter {counter} out of range")
    return domain + counter.to_bytes(8, "big")


def seal(key: bytes, domain: bytes, counter: int, plaintext: bytes, aad: bytes) -> bytes:
    """Encrypt and authenticate ``plaintext``; ``aad`` is authenticated too but not encrypted."""
    return ChaCha20Poly1305(key).encrypt(nonce(domain, counter), plaintext, aad)


def open_sealed(key: bytes, domain: bytes, counter: int, ciphertext: bytes, aad: bytes) -> bytes:
    """Decrypt; :class:`BadMessage` (reason ``bad_tag``) if anything was altered or the key is wrong."""
    if len(ciphertext) < TAG_SIZE:
        raise BadMessage("ciphertext shorter than its authentication tag", "bad_tag")
    try:
        return ChaCha20Poly1305(key).decrypt(nonce(domain, counter), ciphertext, aad)
    except InvalidTag:
        raise BadMessage("authentication failed: the message was altered or sealed with another key",
                         "bad_tag") from None


def hkdf(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)
