"""Bounded msgpack decoding: every refusal is a DecodeError with a stable reason."""

from __future__ import annotations

import struct

import msgpack
import pytest

from runtime import codec
from runtime.codec import DecodeError, Limits


def reason(data: bytes, limits: Limits = codec.DEFAULT_LIMITS) -> str:
    with pytest.raises(DecodeError) as err:
        codec.unpack(data, limits)
    assert err.value.reason in codec.DECODE_REASONS
    assert str(err.value).startswith(err.value.reason + ":")
    return err.value.reason


def test_round_trip_keeps_types():
    obj = {"str": "é", "bin": b"\x00\xff", 3: [1, -2, 2.5, None, True], b"k": {"nested": []}}
    assert codec.unpack(codec.pack(obj)) == obj


def test_oversized_message():
    data = codec.pack(b"x" * 2000)
    assert reason(data, Limits(max_size=1000)) == "too_large"


def test_deep_nesting_refused_within_limit_and_beyond_msgpack_stack():
    assert codec.unpack(b"\x91" * 63 + b"\xc0") is not None  # 63 arrays + a nil: depth 63
    assert reason(b"\x91" * 65 + b"\xc0") == "too_deep"
    assert reason(b"\x81\xa1k" * 100 + b"\xc0") == "too_deep"    # maps too
    assert reason(b"\x91" * 100_000 + b"\xc0") == "too_deep"     # beyond the C decoder's own stack
    assert reason(b"\x91" * 10 + b"\xc0", Limits(max_depth=5)) == "too_deep"


@pytest.mark.parametrize("header", [b"\xdf\xff\xff\xff\xff", b"\xde\xff\xff", b"\xdd\xff\xff\xff\xff",
                                    b"\xdc\xff\xff"])
def test_huge_declared_container_lengths_are_refused_before_allocation(header):
    assert reason(header + b"\x00" * 16) == "too_long"


def test_item_limit_applies_to_honest_lengths_too():
    data = codec.pack(list(range(50)))
    assert codec.unpack(data, Limits(max_items=50)) == list(range(50))
    assert reason(data, Limits(max_items=49)) == "too_long"


def test_huge_declared_string_is_refused():
    assert reason(b"\xdb" + struct.pack(">I", 2**31) + b"abc") in ("too_long", "malformed")


@pytest.mark.parametrize("data", [
    msgpack.packb(msgpack.ExtType(5, b"abc")),
    b"\xc7\x00\x05",                                      # ext8 of length 0
    msgpack.packb(msgpack.Timestamp(1, 2)),               # the one ext msgpack decodes natively
    msgpack.packb({"a": [msgpack.ExtType(1, b"x")]}),     # nested
])
def test_ext_types_refused(data):
    assert reason(data) == "ext_type"


@pytest.mark.parametrize("data", [
    msgpack.packb({True: 1}),
    b"\x81\xc0\x01",                                      # nil key
    b"\x81\xcb" + b"\x00" * 8 + b"\x01",                  # float key
    b"\x81\x91\x01\x02",                                  # array key
    b"\x81\x81\x01\x02\x03",                              # map key
    b"\x81\xa2ok\x91\x81\xcb" + b"\x00" * 8 + b"\x01",   # nested float key
])
def test_non_string_keys_refused(data):
    assert reason(data) == "bad_key"


def test_int_and_bytes_keys_accepted():
    assert codec.unpack(codec.pack({1: "a", b"b": 2, "c": 3})) == {1: "a", b"b": 2, "c": 3}


@pytest.mark.parametrize("data", [b"", b"\x01\x02", b"\x92\x01", b"\xa2\xff\xfe", b"\xc1", b"\xd9"])
def test_malformed(data):
    assert reason(data) == "malformed"


def test_not_bytes():
    with pytest.raises(DecodeError) as err:
        codec.unpack("text")  # type: ignore[arg-type]
    assert err.value.reason == "malformed"


def test_pack_refuses_unencodable():
    with pytest.raises(codec.EncodeError):
        codec.pack({"x": object()})


def test_envelope_round_trip():
    data = codec.pack_envelope("aes", {"h": b"1", "ct": b"2"})
    env = codec.unpack_envelope(data)
    assert env == codec.Envelope("aes", {"h": b"1", "ct": b"2"})
    # the order of the keys does not matter: every reader decodes the whole envelope
    assert codec.unpack_envelope(codec.pack({"load": {}, "enc": "aes"})) == codec.Envelope("aes", {})


@pytest.mark.parametrize("data", [
    b"\x82\xa3cmd\xa5_auth\xa3cmd\xa7publish",                   # the same key twice, last one differs
    b"\x82\xa1a\x01\xa1a\x01",                                     # the same key and value twice
    b"\x81\xa1x\x82\x01\xa1a\x01\xa1b",                            # nested, int keys
    b"\x82\xc4\x01k\x01\xc4\x01k\x02",                             # bytes keys
    b"\x91\x83\xa1a\x01\xa1b\x02\xa1a\x03",                        # inside an array
])
def test_duplicate_map_keys_refused(data):
    assert reason(data) == "duplicate_key"


def test_duplicate_keys_refused_in_envelopes_and_loads():
    # {"enc": "aes", "load": {}, "enc": "clear"}: which "enc" counts would depend on the reader
    twice_enc = b"\x83\xa3enc\xa3aes\xa4load\x80\xa3enc\xa5clear"
    with pytest.raises(DecodeError) as err:
        codec.unpack_envelope(twice_enc)
    assert err.value.reason == "duplicate_key"
    twice_cmd = b"\x82\xa3enc\xa5clear\xa4load\x82\xa3cmd\xa7publish\xa3cmd\xa5_auth"
    with pytest.raises(DecodeError) as err:
        codec.unpack_envelope(twice_cmd)
    assert err.value.reason == "duplicate_key"


@pytest.mark.parametrize("obj", [
    [], {"enc": "aes"}, {"enc": "aes", "load": {}, "x": 1}, {"enc": "rsa", "load": {}},
    {"enc": "clear", "load": [1]}, {"enc": 1, "load": {}},
])
def test_bad_envelopes(obj):
    with pytest.raises(DecodeError) as err:
        codec.unpack_envelope(codec.pack(obj))
    assert err.value.reason == "bad_envelope"


def test_error_load_shape():
    assert codec.error_load("replayed", "seen") == {"error": {"reason": "replayed", "message": "seen"}}


def test_small_shape_bounds_values_and_depth_without_building():
    hello = codec.pack_envelope("clear", {"cmd": "_auth", "v": 1, "id": "web1", "pub": b"k" * 32})
    assert codec.small_shape(hello, max_depth=3, max_nodes=32)
    assert not codec.small_shape(hello, max_depth=1, max_nodes=32)          # the load is depth 2
    assert not codec.small_shape(hello, max_depth=3, max_nodes=8)
    assert not codec.small_shape(b"\x91" * 5000 + b"\xc0", max_depth=3, max_nodes=32)
    assert not codec.small_shape(codec.pack(list(range(100))), max_depth=3, max_nodes=32)
    assert not codec.small_shape(hello[:-3], max_depth=3, max_nodes=32)     # truncated
    assert not codec.small_shape(hello + b"\x00", max_depth=3, max_nodes=32)  # trailing bytes
    assert codec.small_shape(codec.pack(b"x" * 100_000), max_depth=1, max_nodes=1)   # bins are skipped
