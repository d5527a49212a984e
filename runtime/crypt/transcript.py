"""The unambiguous encoding of typed fields that every signature, MAC and key derivation of
protocol version 1 covers.  A module of its own, without the cipher suite, so that a publishing
client (its HMAC proof, ``runtime.crypt.clientkey``) starts without loading ``cryptography``."""

from __future__ import annotations

import struct


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
