"""The EventPublisher of a master in a cluster, with real ipc sockets: local events go to the
listeners and to the relay, events the relay fired go to the listeners only, and the relay is told
which topics the bus is listened to."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import zmq

from runtime import codec, transport
from runtime.events import EVENT_PULL, PROBE_PREFIX, EventListener, EventPusher
from runtime.master import event_publisher
from runtime.master.event_publisher import (
    EVENT_RELAY,
    RELAYED,
    SUBSCRIPTIONS,
    Subscriptions,
    listened,
    unpack_topics,
)


def test_subscriptions_follow_first_subscribe_and_last_unsubscribe() -> None:
    subs = Subscriptions()
    assert subs.update(b"\x01salt/job/") and not subs.update(b"\x01salt/job/")
    assert subs.update(b"\x01") and subs.topics == {b"salt/job/", b""}
    assert subs.update(b"\x00salt/job/") and not subs.update(b"\x00salt/job/") and subs.topics == {b""}
    assert not subs.update(b"") and not subs.update(b"\x05junk")          # not a subscription message
    assert unpack_topics(subs.packed()) == frozenset({b""})
    assert unpack_topics(b"\xc1") is None and unpack_topics(codec.pack(["str"])) is None
    assert listened(None, b"salt/auth")                                    # not told yet: fire everything
    assert listened(frozenset({b""}), b"salt/auth")
    assert listened(frozenset({b"salt/job/1"}), b"salt/job/1/ret/m1")
    assert not listened(frozenset({b"salt/job/1"}), b"salt/auth") and not listened(frozenset(), b"x")


PROBE = PROBE_PREFIX.encode()     # the listener's connection probes: handed to the relay, which drops them


def recv_relay(sock: zmq.Socket, timeout: float = 3.0) -> list[list[bytes]]:
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and sock.poll(int((deadline - time.monotonic()) * 1000) or 1):
        got.append(sock.recv_multipart())
        if any(f[0] != SUBSCRIPTIONS and not f[0].startswith(PROBE) for f in got):
            break
    return got


def wait_topics(sock: zmq.Socket, wanted: frozenset[bytes], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sock.poll(200):
            frames = sock.recv_multipart()
            if frames[0] == SUBSCRIPTIONS and unpack_topics(frames[2]) == wanted:
                return
    raise AssertionError(f"the relay was never told {wanted}")


def test_a_cluster_bus_hands_local_events_to_the_relay_only(tmp_path: Path) -> None:
    sock_dir = str(tmp_path)
    stop = threading.Event()
    thread = threading.Thread(target=event_publisher.run, args=({"sock_dir": sock_dir}, stop), kwargs={"shared": True},
                              daemon=True)
    thread.start()
    ctx = zmq.Context()
    relay = transport.make_socket(ctx, zmq.PULL)
    relay.connect(transport.ipc_address(sock_dir, EVENT_RELAY))
    pusher = EventPusher(ctx, sock_dir)
    raw = transport.make_socket(ctx, zmq.PUSH)
    raw.connect(transport.ipc_address(sock_dir, EVENT_PULL))
    listener = EventListener(sock_dir, "salt/job/", ctx=ctx)
    try:
        wait_topics(relay, frozenset({b"salt/job/"}))       # the listener's subscription, told at once
        assert listener.wait_connected(sock_dir)
        pusher.fire("salt/job/1/new", {"jid": "1"})         # fired on this master
        event = listener.get(3.0)
        assert event is not None and event[0] == "salt/job/1/new"
        frames = [f for f in recv_relay(relay) if f[0] != SUBSCRIPTIONS and not f[0].startswith(PROBE)]
        assert frames and frames[0][0] == b"salt/job/1/new" and codec.unpack(frames[0][1])["jid"] == "1"
        raw.send_multipart([b"salt/job/2/ret/m1", codec.pack({"id": "m1"}), RELAYED])   # from another master
        event = listener.get(3.0)
        assert event is not None and event == ("salt/job/2/ret/m1", {"id": "m1"})
        assert not [f for f in recv_relay(relay, 0.5) if f[0] != SUBSCRIPTIONS]        # not handed back
        raw.send_multipart([b"salt/job/3/new", b"x", b"y", b"z"])                        # malformed: dropped
        assert listener.get(0.3) is None
        listener.close()
        wait_topics(relay, frozenset())                     # nobody listens any more
    finally:
        stop.set()
        thread.join(3.0)
        for sock in (relay, raw):
            sock.close(linger=0)
        listener.close()
        pusher.close()
        ctx.term()
    assert not thread.is_alive()
