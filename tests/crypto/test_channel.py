"""Sealed requests and replies: tamper detection, replay refusal, binding of replies to requests."""

from __future__ import annotations

import os

import pytest

from runtime import codec
from runtime.crypt.channel import ClientChannel, ServerChannel
from runtime.crypt.errors import BadMessage, RemoteRefusal, ReplayRefused, UnknownSession
from runtime.crypt.handshake import now_ms


def load_of(data: bytes) -> dict:
    return codec.unpack_envelope(data).load


def flip_byte(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


def test_round_trip(fleet):
    _, _, client, server = fleet.accepted("web1")
    ctr, data = client.seal_request({"cmd": "_return", "jid": "1", "return": True})
    assert codec.unpack_envelope(data).enc == "aes"
    request = server.open_request(load_of(data))
    assert request.minion_id == "web1" and request.counter == ctr == 1
    assert request.payload == {"cmd": "_return", "jid": "1", "return": True}
    reply = server.seal_reply(request, {"ret": "ok"})
    assert client.open_reply(ctr, reply) == {"ret": "ok"}


def test_a_heartbeat_is_marked_in_its_authenticated_header(fleet):
    """The mark the request proxy reads (runtime/transport_flows.py) is the header's last entry,
    authenticated with it: opened as marked, and a mark changed on the path breaks the tag."""
    from runtime.transport_flows import sealed_head

    _, _, client, server = fleet.accepted("web1")
    _, plain = client.seal_request({"cmd": "_return", "jid": "1"})
    ctr, marked = client.seal_request({"cmd": "_heartbeat", "epoch": 0}, heartbeat=True)
    assert sealed_head(plain) == (client.sid, False) and sealed_head(marked) == (client.sid, True)
    assert not server.open_request(load_of(plain)).heartbeat
    request = server.open_request(load_of(marked))
    assert request.heartbeat and request.payload == {"cmd": "_heartbeat", "epoch": 0}
    assert client.open_reply(ctr, server.seal_reply(request, {"now": 1})) == {"now": 1}
    _, again = client.seal_request({"cmd": "_heartbeat", "epoch": 0}, heartbeat=True)
    with pytest.raises(BadMessage):
        server.open_request(load_of(again.replace(codec.pack("hb"), codec.pack("hc"))))
    # a marked request larger than a heartbeat: not in the proxy's heartbeat lane, refused unopened
    _, padded = client.seal_request({"cmd": "_heartbeat", "epoch": 0, "pad": "x" * 300}, heartbeat=True)
    assert sealed_head(padded) == (client.sid, False)
    with pytest.raises(BadMessage, match="at most 256 bytes"):
        server.open_request(load_of(padded))


def test_minion_id_comes_from_the_session_not_the_payload(fleet):
    _, _, client, server = fleet.accepted("web1")
    _, data = client.seal_request({"cmd": "_return", "id": "db1"})
    request = server.open_request(load_of(data))
    assert request.minion_id == "web1"


def test_every_header_and_ciphertext_byte_is_authenticated(fleet):
    _, _, client, server = fleet.accepted("web1")
    _, data = client.seal_request({"x": 1})
    load = load_of(data)
    for field in ("h", "ct"):
        for index in range(len(load[field])):
            bad = dict(load, **{field: flip_byte(load[field], index)})
            with pytest.raises((BadMessage, UnknownSession)):
                server.open_request(bad)
    # the untouched message still opens: failed attempts did not consume its counter
    assert server.open_request(load).payload == {"x": 1}


def test_replay_refused(fleet):
    _, _, client, server = fleet.accepted("web1")
    _, data = client.seal_request({"x": 1})
    server.open_request(load_of(data))
    with pytest.raises(ReplayRefused) as err:
        server.open_request(load_of(data))
    assert err.value.reason == "replayed"
    # a second worker process would share the store; a second ServerChannel here stands for it
    with pytest.raises(ReplayRefused):
        ServerChannel(fleet.store).open_request(load_of(data))


def test_reordered_counters_accepted_once_each(fleet):
    _, _, client, server = fleet.accepted("web1")
    sealed = [client.seal_request({"n": i}) for i in range(10)]
    for _, data in reversed(sealed):
        server.open_request(load_of(data))
    for _, data in sealed:
        with pytest.raises(ReplayRefused):
            server.open_request(load_of(data))


def test_far_behind_window_refused(fleet):
    _, _, client, server = fleet.accepted("web1")
    first = client.seal_request({"n": 0})[1]
    for _ in range(1100):
        client.seal_request({})
    server.open_request(load_of(client.seal_request({"n": "last"})[1]))
    with pytest.raises(ReplayRefused) as err:
        server.open_request(load_of(first))
    assert err.value.reason == "too_old"


@pytest.mark.parametrize("shift_ms,reason", [(-10 * 60_000, "stale"), (10 * 60_000, "future")])
def test_stale_and_future_timestamps_refused(fleet, shift_ms, reason):
    _, _, client, server = fleet.accepted("web1")
    _, data = client.seal_request({"x": 1}, now=now_ms() + shift_ms)
    with pytest.raises(ReplayRefused) as err:
        server.open_request(load_of(data))
    assert err.value.reason == reason


def test_clock_offset_from_auth_is_applied(fleet):
    _, result, _, server = fleet.accepted("web1")
    client = ClientChannel(result.session, clock_offset_ms=3_600_000)  # our clock an hour behind
    _, data = client.seal_request({"x": 1}, now=now_ms() - 3_600_000)
    assert server.open_request(load_of(data)).payload == {"x": 1}


def test_wrong_session_key_fails(fleet):
    _, _, client_a, server = fleet.accepted("web1")
    _, result_b, _, _ = fleet.accepted("web2")
    # web2 tries to pass its sealed message off under web1's session id
    _, data_a = client_a.seal_request({"x": 1})
    _, data_b = ClientChannel(result_b.session).seal_request({"x": 2})
    header_a = load_of(data_a)["h"]
    with pytest.raises(BadMessage) as err:
        server.open_request({"h": header_a, "ct": load_of(data_b)["ct"]})
    assert err.value.reason == "bad_tag"


def test_unknown_session(fleet):
    _, result, client, server = fleet.accepted("web1")
    fleet.store.drop_session(result.session.sid)
    _, data = client.seal_request({"x": 1})
    with pytest.raises(UnknownSession):
        server.open_request(load_of(data))


def test_revocation_takes_effect_even_with_cached_keys(fleet):
    _, _, client, server = fleet.accepted("web1")
    server.open_request(load_of(client.seal_request({})[1]))  # keys now cached in this worker
    fleet.store.revoke("web1")
    with pytest.raises(UnknownSession):
        server.open_request(load_of(client.seal_request({})[1]))


def test_reply_bound_to_its_request(fleet):
    _, _, client, server = fleet.accepted("web1")
    ctr1, data1 = client.seal_request({"n": 1})
    ctr2, data2 = client.seal_request({"n": 2})
    reply1 = server.seal_reply(server.open_request(load_of(data1)), {"for": 1})
    reply2 = server.seal_reply(server.open_request(load_of(data2)), {"for": 2})
    with pytest.raises(BadMessage) as err:
        client.open_reply(ctr2, reply1)
    assert err.value.reason == "wrong_request"
    # rewriting the header's counter breaks authentication
    load = load_of(reply1)
    header = codec.unpack(load["h"])
    forged = codec.pack_envelope("aes", {"h": codec.pack(dict(header, re=ctr2)), "ct": load["ct"]})
    with pytest.raises(BadMessage):
        client.open_reply(ctr2, forged)
    assert client.open_reply(ctr2, reply2) == {"for": 2}


def test_tampered_reply_refused(fleet):
    _, _, client, server = fleet.accepted("web1")
    ctr, data = client.seal_request({})
    reply = load_of(server.seal_reply(server.open_request(load_of(data)), {"ok": 1}))
    for field in ("h", "ct"):
        bad = codec.pack_envelope("aes", dict(reply, **{field: flip_byte(reply[field], len(reply[field]) - 1)}))
        with pytest.raises((BadMessage, codec.DecodeError)):
            client.open_reply(ctr, bad)


def test_reply_from_another_session_refused(fleet):
    _, _, client_a, server = fleet.accepted("web1")
    _, result_b, _, _ = fleet.accepted("web2")
    client_b = ClientChannel(result_b.session)
    ctr, data = client_b.seal_request({})
    reply = server.seal_reply(server.open_request(load_of(data)), {})
    with pytest.raises(BadMessage) as err:
        client_a.open_reply(ctr, reply)
    assert err.value.reason == "wrong_session"


def test_clear_error_reply_is_a_remote_refusal(fleet):
    _, _, client, _ = fleet.accepted("web1")
    ctr, _ = client.seal_request({})
    with pytest.raises(RemoteRefusal) as err:
        client.open_reply(ctr, codec.pack_envelope("clear", codec.error_load("replayed", "seen before")))
    assert err.value.reason == "replayed"
    with pytest.raises(BadMessage):
        client.open_reply(ctr, codec.pack_envelope("clear", {"ret": True}))


@pytest.mark.parametrize("load", [
    {}, {"h": b"x"}, {"h": "text", "ct": b""}, {"h": b"\xc1", "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 15, "ctr": 1, "ts": 1}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 0, "ts": 1}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": True, "ts": 1}), "ct": b""},
    {"h": codec.pack({"v": 9, "sid": b"s" * 16, "ctr": 1, "ts": 1}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1, "ts": 1}), "ct": b"short"},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1, "ts": 1, "k": "pillar"}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1, "ts": 1, "x": "hb"}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1, "ts": 1, "k": "hb", "j": 1}), "ct": b""},
    {"h": codec.pack({"v": 1, "sid": b"s" * 16, "ctr": 1, "ts": 1, "k": "hb"}), "ct": b"x" * 257},
])
def test_malformed_loads(fleet, load):
    server = ServerChannel(fleet.store)
    with pytest.raises((BadMessage, UnknownSession)) as err:
        server.open_request(load)
    assert err.value.reason in ("malformed", "unsupported_version", "unknown_session", "bad_tag")


def test_forked_child_cannot_seal(fleet):
    _, _, client, _ = fleet.accepted("web1")
    pid = os.fork()
    if pid == 0:
        try:
            client.seal_request({})
            os._exit(1)
        except RuntimeError:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
