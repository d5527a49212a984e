"""The one cipher suite of protocol version 1, and unambiguous transcript encoding.

Suite ``saltpan/1``: Ed25519 signatures, X25519 key agreement, HKDF-SHA256, ChaCha20-Poly1305
(256-bit key, 96-bit nonce, 128-bit tag).  Nonces are never random: each key belongs to one
direction of one session (or one publish epoch) and the nonce is ``domain (4 bytes) || counter
(8 bytes, big endian)``, so a nonce repeats only if a counter does, which the senders prevent.
"""

from __future__ import annotations

import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from runtime.crypt.errors import BadMessage

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


def transcript(label: str, *fields: bytes | str | int | None) -> bytes:
    """Injective encoding of typed fields behind a label, for signatures and key derivation.

    Each field is a type byte and a 4-byte length before its bytes, so no two different field
    lists share an encoding; ints are signed 8-byte big endian; None is its own type.
    """
    out = [b"saltpan/1 ", label.encode(), b"\x00"]
    for field in fields:
        if field is None:
            out.append(b"N\x00\x00\x00\x00")
            continue
        if isinstance(field, bool):
            raise TypeError("transcript fields may not be bool")
        if isinstance(field, int):
            tag, data = b"I", struct.pack(">q", field)
        elif isinstance(field, str):
            tag, data = b"S", field.encode()
        elif isinstance(field, (bytes, bytearray)):
            tag, data = b"B", bytes(field)
        else:
            raise TypeError(f"transcript field of type {type(field).__name__}")
        out.append(tag + struct.pack(">I", len(data)) + data)
    return b"".join(out)
