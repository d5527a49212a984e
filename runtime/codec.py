"""Bounded msgpack encoding and decoding, and the ``{"enc", "load"}`` envelope.

Every byte string that arrives from a socket goes through :func:`unpack` (or
:func:`unpack_envelope`), which refuses, with a :class:`DecodeError` naming its
``reason``:

- ``too_large``  the message is longer than ``Limits.max_size``;
- ``too_long``   a string, byte string, array or map declares more items than allowed
                 (checked by the C decoder before anything is allocated);
- ``too_deep``   containers nest deeper than ``Limits.max_depth``;
- ``ext_type``   any msgpack extension type, timestamps included;
- ``bad_key``    a map key that is not str, bytes or int (bool, float, None, arrays);
- ``duplicate_key`` a map holding the same key twice: msgpack lets the last one win, so two
                 readers of the same bytes could disagree on what they say (a parser
                 differential); no honest encoder writes one;
- ``malformed``  truncated data, trailing bytes, invalid UTF-8, reserved type bytes;
- ``bad_envelope`` (envelope only) not ``{"enc": "clear"|"aes", "load": ...}``.

Strings decode to ``str`` (``raw=False``) and byte strings to ``bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack

ENC_CLEAR = "clear"
ENC_AES = "aes"
ENCODINGS = (ENC_CLEAR, ENC_AES)

DECODE_REASONS = ("too_large", "too_long", "too_deep", "ext_type", "bad_key", "duplicate_key", "malformed",
                  "bad_envelope")


class DecodeError(ValueError):
    """Refused input.  ``reason`` is one of ``DECODE_REASONS``; ``str(err)`` is a sentence for logs."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class EncodeError(TypeError):
    """An object that msgpack cannot encode (a bug in the sender, never peer input)."""


@dataclass(frozen=True)
class Limits:
    max_size: int = 16 * 1024 * 1024   # whole message, bytes (config max_message_size)
    max_items: int = 1_000_000         # items in one array or map
    max_depth: int = 64                # nesting of arrays and maps (the top container is depth 1)


DEFAULT_LIMITS = Limits()
# Small inner structures (envelope headers, auth loads) get tight limits.
HEADER_LIMITS = Limits(max_size=4096, max_items=32, max_depth=2)


def _refuse_ext(code: int, data: bytes) -> Any:
    raise DecodeError("ext_type", f"msgpack extension type {code} is not accepted")


def pack(obj: Any) -> bytes:
    """msgpack-encode ``obj`` (str as str, bytes as bin; tuples become arrays)."""
    try:
        return msgpack.packb(obj, use_bin_type=True, datetime=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EncodeError(f"cannot encode {type(obj).__name__} as msgpack: {exc}") from None


class _KeyError(Exception):
    """Raised inside the decoder by :func:`_map_from_pairs`; turned into a DecodeError."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


_KEY_TYPES = frozenset({str, bytes, int})   # exact types: msgpack decodes to no subclass, and bool is out


def _map_from_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """Build each map from its key/value pairs as decoded: plain keys only, each once."""
    try:
        built = dict(pairs)
    except TypeError as exc:  # an array or a map as a key (unhashable)
        raise _KeyError("bad_key", f"unusable map key ({exc})") from None
    if not _KEY_TYPES.issuperset(map(type, built)):
        key = next(k for k in built if type(k) not in _KEY_TYPES)
        raise _KeyError("bad_key", f"map key of type {type(key).__name__} "
                                   "(only str, bytes and int keys are accepted)")
    if len(built) != len(pairs):
        seen: set[Any] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyError("duplicate_key", f"map key {str(key)[:40]!r} appears more than once")
            seen.add(key)
    return built


_EXT_TYPES = (msgpack.ExtType, msgpack.Timestamp)


def _check_structure(obj: Any, max_depth: int) -> None:
    """Depth of containers, level by level, and no extension objects (keys were checked while
    decoding).  The decoder cannot produce extension objects (``max_ext_len=0``, ``ext_hook``
    refuses the empty ones): checked again here all the same, as cheaply (exact types: msgpack
    decodes to no subclass)."""
    if type(obj) is not dict and type(obj) is not list:
        if isinstance(obj, _EXT_TYPES):
            raise DecodeError("ext_type", "msgpack extension types are not accepted")
        return
    level: list[Any] = [obj]
    depth = 1
    while level:
        if depth > max_depth:
            raise DecodeError("too_deep", f"containers nest deeper than {max_depth} levels")
        inner: list[Any] = []
        for node in level:
            for value in node.values() if type(node) is dict else node:
                kind = type(value)
                if kind is dict or kind is list:
                    inner.append(value)
                elif kind is msgpack.ExtType or kind is msgpack.Timestamp:
                    raise DecodeError("ext_type", "msgpack extension types are not accepted")
        level = inner
        depth += 1


def unpack(data: bytes | bytearray | memoryview, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Decode one msgpack object from ``data`` within ``limits``; raise :class:`DecodeError` otherwise."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DecodeError("malformed", f"expected bytes, got {type(data).__name__}")
    size = len(data)
    if size > limits.max_size:
        raise DecodeError("too_large", f"message of {size} bytes exceeds the limit of {limits.max_size}")
    if size == 0:
        raise DecodeError("malformed", "empty message")
    # A declared length can never honestly exceed what the buffer holds: an array item takes at
    # least one byte and a map pair two.  Bounding by the buffer stops pre-allocation attacks.
    try:
        obj = msgpack.unpackb(
            data, raw=False, strict_map_key=False, use_list=True, timestamp=0,
            ext_hook=_refuse_ext, max_ext_len=0, object_pairs_hook=_map_from_pairs,
            max_str_len=size, max_bin_len=size,
            max_array_len=min(limits.max_items, size), max_map_len=min(limits.max_items, size // 2),
        )
    except DecodeError:
        raise
    except _KeyError as exc:
        raise DecodeError(exc.reason, exc.detail) from None
    except msgpack.ExtraData:
        raise DecodeError("malformed", "trailing bytes after the message") from None
    except msgpack.StackError:
        raise DecodeError("too_deep", f"containers nest deeper than {limits.max_depth} levels") from None
    except UnicodeDecodeError:
        raise DecodeError("malformed", "a string is not valid UTF-8") from None
    except ValueError as exc:
        text = str(exc)
        if "exceeds max_ext_len" in text:
            raise DecodeError("ext_type", "msgpack extension types are not accepted") from None
        if "exceeds max_" in text:
            raise DecodeError("too_long", f"declared length too large ({text})") from None
        raise DecodeError("malformed", f"not valid msgpack ({text or 'truncated'})") from None
    except TypeError as exc:  # e.g. an array used as a map key (unhashable)
        raise DecodeError("bad_key", f"unusable map key ({exc})") from None
    except Exception as exc:  # msgpack's FormatError and friends
        raise DecodeError("malformed", f"not valid msgpack ({type(exc).__name__}: {exc})") from None
    _check_structure(obj, limits.max_depth)
    return obj


_MAP_HEADS = frozenset({*range(0x80, 0x90), 0xDE, 0xDF})
_ARRAY_HEADS = frozenset({*range(0x90, 0xA0), 0xDC, 0xDD})


def small_shape(data: bytes | bytearray | memoryview, max_depth: int, max_nodes: int) -> bool:
    """Whether ``data`` is one msgpack object of at most ``max_nodes`` values in all (containers,
    their keys and items), nested at most ``max_depth`` deep, found without building anything:
    a bounded-cost test made before decoding untrusted bytes where the cost matters (a body of
    a thousand nested arrays costs :func:`unpack` far more to build than to refuse).  A true
    answer promises nothing else: decode with :func:`unpack`."""
    size = len(data)
    reader = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(size, 1), max_str_len=size,
                              max_bin_len=size, max_ext_len=0, max_array_len=max_nodes, max_map_len=max_nodes)
    stack = [1]        # values still to read at each open level (the outermost: the one object)
    nodes = 0
    try:
        reader.feed(data)
        while stack:
            if stack[-1] == 0:
                stack.pop()
                continue
            stack[-1] -= 1
            nodes += 1
            if nodes > max_nodes:
                return False
            head = data[reader.tell()]
            if head in _MAP_HEADS:
                items = 2 * reader.read_map_header()
            elif head in _ARRAY_HEADS:
                items = reader.read_array_header()
            else:
                reader.skip()
                continue
            if len(stack) > max_depth:
                return False
            stack.append(items)
        return reader.tell() == size
    except Exception:  # noqa: BLE001 - msgpack's errors for truncated or oversized data
        return False


@dataclass(frozen=True)
class Envelope:
    enc: str
    load: Any


def pack_envelope(enc: str, load: Any) -> bytes:
    """Encode ``{"enc": enc, "load": load}``."""
    if enc not in ENCODINGS:
        raise EncodeError(f"unknown envelope encoding {enc!r}")
    return pack({"enc": enc, "load": load})


def unpack_envelope(data: bytes | memoryview, limits: Limits = DEFAULT_LIMITS) -> Envelope:
    """Decode and check an envelope: a map of exactly ``enc`` and ``load``; a clear load is a map."""
    obj = unpack(data, limits)
    if not isinstance(obj, dict) or set(obj) != {"enc", "load"}:
        raise DecodeError("bad_envelope", 'expected a map with exactly the keys "enc" and "load"')
    enc = obj["enc"]
    if enc not in ENCODINGS:
        raise DecodeError("bad_envelope", f'"enc" must be "clear" or "aes", got {str(enc)[:40]!r}')
    if not isinstance(obj["load"], dict):
        raise DecodeError("bad_envelope", f'"load" must be a map, got {type(obj["load"]).__name__}')
    return Envelope(enc, obj["load"])


def error_load(reason: str, message: str) -> dict[str, Any]:
    """The clear load a server answers a refused request with: ``{"error": {"reason", "message"}}``."""
    return {"error": {"reason": reason, "message": message}}
