"""RequestClient against a real ROUTER on 127.0.0.1: replies, retries, reconnects, time bounds."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from runtime.transport import RequestClient, RequestTimeout, TransportError, tcp_address


def echo(frames):
    ident, empty, rid, body = frames
    return [ident, empty, rid, b"echo:" + body]


def test_request_reply(ctx, router):
    server = router(echo)
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        assert client.request(b"hello") == b"echo:hello"
        assert client.request(b"again") == b"echo:again"
        assert client.reconnects == 0
    assert [f[3] for f in server.received] == [b"hello", b"again"]
    assert all(len(f[2]) == 8 for f in server.received) and server.received[0][2] != server.received[1][2]


def test_retry_after_timeout_reconnects_and_uses_a_fresh_body(ctx, router):
    seen = []

    def drop_first(frames):
        seen.append(frames)
        return None if len(seen) == 1 else echo(frames)

    server = router(drop_first)
    bodies = iter([b"first", b"second"])
    client = RequestClient(server.endpoint, ctx=ctx, timeout=0.3, tries=3)
    context, reply = client.request_with(lambda: (len(seen), next(bodies)))
    assert reply == b"echo:second" and context == 1
    assert client.reconnects == 1
    assert seen[0][0] != seen[1][0], "the retry came over a new connection (new ROUTER identity)"
    client.close()


def test_stale_and_junk_replies_are_ignored(ctx, router):
    def confuse(frames):
        ident, empty, rid, body = frames
        server.sock.send_multipart([ident, b"", b"otherrid", b"stale"])
        server.sock.send_multipart([ident, b"junk"])
        server.sock.send_multipart([ident, b"", rid, b"x", b"extra-frame"])
        return [ident, empty, rid, b"right"]

    server = router(confuse)
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        assert client.request(b"q") == b"right"


def test_silent_server_times_out_in_bounded_time(ctx, router):
    server = router(lambda frames: None)
    client = RequestClient(server.endpoint, ctx=ctx, timeout=0.2, tries=3)
    start = time.monotonic()
    with pytest.raises(RequestTimeout, match="after 3 tries"):
        client.request(b"anyone?")
    elapsed = time.monotonic() - start
    assert 0.55 < elapsed < 2.0
    assert len(server.received) == 3 and client.reconnects == 3
    client.close()


def test_nothing_listening(ctx):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RequestClient(tcp_address("127.0.0.1", port), ctx=ctx, timeout=0.2, tries=2)
    start = time.monotonic()
    with pytest.raises(RequestTimeout):
        client.request(b"x")
    assert time.monotonic() - start < 2.0
    client.close()


def test_server_restarting_on_the_same_port_is_reached_by_a_retry(ctx, router):
    first = router(lambda frames: None)
    client = RequestClient(first.endpoint, ctx=ctx, timeout=0.5, tries=8)
    result = []
    thread = threading.Thread(target=lambda: result.append(client.request(b"job")))
    thread.start()
    deadline = time.monotonic() + 5
    while not first.received and time.monotonic() < deadline:
        time.sleep(0.01)
    first.close()                                   # the master dies after the first attempt ...
    while True:                                     # ... and comes back on the same port
        try:
            router(echo, first.endpoint)
            break
        except TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    thread.join(10)
    assert result == [b"echo:job"]
    client.close()


def test_invalid_arguments(ctx):
    with pytest.raises(ValueError):
        RequestClient("tcp://127.0.0.1:1", ctx=ctx, tries=0)
