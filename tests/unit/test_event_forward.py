"""events.forward: the EventPublisher's forwarding (libzmq's proxy on a thread), with real ipc
sockets: what workers push reaches subscribers in order, and setting stop ends it promptly."""

from __future__ import annotations

import tempfile
import threading
import time

import zmq

from runtime import transport
from runtime.events import EVENT_PUB, EVENT_PULL, EventListener, EventPusher, forward


def test_pushed_events_reach_a_listener_and_stop_ends_the_forwarding() -> None:
    sock_dir = tempfile.mkdtemp(prefix="spev-", dir="/tmp")
    ctx = zmq.Context()
    pull = transport.make_socket(ctx, zmq.PULL)
    transport.bind(pull, transport.ipc_address(sock_dir, EVENT_PULL))
    pub = transport.make_socket(ctx, zmq.PUB)
    transport.bind(pub, transport.ipc_address(sock_dir, EVENT_PUB))
    stop = threading.Event()
    forwarding = threading.Thread(target=forward, args=(ctx, pull, pub, stop))
    forwarding.start()
    listener = EventListener(sock_dir, "salt/job/", ctx=ctx)
    pusher = EventPusher(ctx, sock_dir)
    try:
        assert listener.wait_connected(sock_dir, timeout=5)
        for n in range(300):
            assert pusher.fire(f"salt/job/1/ret/m{n}", {"n": n})
        pusher.fire("other/tag", {"n": -1})          # not subscribed: not seen
        got = []
        while len(got) < 300:
            event = listener.get(5)
            assert event is not None, f"only {len(got)} events arrived"
            got.append(event)
        assert [data["n"] for _, data in got] == list(range(300))
        assert got[7][0] == "salt/job/1/ret/m7" and "_stamp" in got[7][1]
        started = time.monotonic()
        stop.set()
        forwarding.join(5)
        assert not forwarding.is_alive() and time.monotonic() - started < 2
    finally:
        stop.set()
        forwarding.join(5)
        pusher.close()
        listener.close()
        pull.close(linger=0)
        pub.close(linger=0)
        ctx.term()
