"""The master's event bus: workers push events, the EventPublisher republishes them locally.

Frames are ``[tag, msgpack(data)]``.  Tags are Salt's (``salt/job/<jid>/ret/<id>``,
``salt/auth``, ``salt/key``, ``minion_start``, ``salt/presence/present`` ...).
The bus is local to the master (ipc sockets in sock_dir, 0600).
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import zmq

from runtime import codec, transport

EVENT_PULL = "master_event_pull.ipc"
EVENT_PUB = "master_event_pub.ipc"
# Tag prefixes only the master itself may fire (minion events with these are refused).
PROBE_PREFIX = "saltpan/probe/"
MASTER_PREFIXES = ("salt/job/", "salt/auth", "salt/key", "salt/presence/", "salt/run/", "salt/wheel/")


def tagify(*parts: str) -> str:
    return "/".join(str(p).strip("/") for p in parts if p != "")


def stamp() -> str:
    return datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None).isoformat()


def forward(ctx: zmq.Context, pull: zmq.Socket, pub: zmq.Socket, stop: threading.Event) -> None:
    """The EventPublisher's work: every event pushed to ``pull`` goes out on ``pub``, until ``stop``.

    The forwarding is libzmq's own proxy (``zmq_proxy_steerable``), in C on a thread of its own:
    no Python runs per event (a Python receive-and-send loop cost ~4 ms of CPU per ``test.ping`` to
    20 minions, one event per return).  Only master processes push here (ipc, 0600); a subscriber
    drops any message that is not ``[tag, data]`` (:meth:`EventListener.get`).  PUB never blocks:
    past its high-water mark, events are dropped for the slow subscriber, as before."""
    control = ctx.socket(zmq.PAIR)
    steer = ctx.socket(zmq.PAIR)
    address = f"inproc://saltpan-event-forward-{id(pull)}"
    control.bind(address)
    steer.connect(address)
    forwarding = threading.Thread(target=_proxy, args=(pull, pub, control), name="event-forward", daemon=True)
    forwarding.start()
    try:
        while not stop.wait(0.2) and forwarding.is_alive():
            pass
    finally:
        steer.send(b"TERMINATE")
        forwarding.join(5)
        steer.close(linger=0)
        control.close(linger=0)


def _proxy(pull: zmq.Socket, pub: zmq.Socket, control: zmq.Socket) -> None:
    try:
        zmq.proxy_steerable(pull, pub, None, control)
    except zmq.ZMQError:     # the context or a socket closed under it: the process is stopping
        pass


class EventPusher:
    """Fire events onto the master bus (used in worker and maintenance processes)."""

    def __init__(self, ctx: zmq.Context, sock_dir: str):
        self.sock = transport.make_socket(ctx, zmq.PUSH)
        self.sock.connect(transport.ipc_address(sock_dir, EVENT_PULL))

    def fire(self, tag: str, data: Mapping[str, Any]) -> bool:
        payload = dict(data)
        payload.setdefault("_stamp", stamp())
        try:
            transport.send_parts(self.sock, [tag.encode(), codec.pack(payload)], transport.NOBLOCK)
            return True
        except zmq.Again:
            return False

    def close(self, linger_ms: int = 0) -> None:
        """Close; a short-lived process (``saltpan key``) passes ``linger_ms`` so the events it
        just fired are delivered before it exits."""
        self.sock.close(linger=linger_ms)


class EventListener:
    """Subscribe to the master bus (the CLI and tests). Subscribe before you act."""

    def __init__(self, sock_dir: str, prefix: str = "", ctx: zmq.Context | None = None):
        self.ctx = ctx or zmq.Context.instance()
        self.sock = transport.make_socket(self.ctx, zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        self.sock.connect(transport.ipc_address(sock_dir, EVENT_PUB))

    def get(self, timeout: float) -> tuple[str, dict[str, Any]] | None:
        if not self.sock.poll(max(0, int(timeout * 1000)), zmq.POLLIN):
            return None
        frames = self.sock.recv_multipart()
        if len(frames) != 2:
            return None
        try:
            data = codec.unpack(frames[1])
        except codec.DecodeError:
            return None
        return frames[0].decode("utf-8", "replace"), data if isinstance(data, dict) else {"data": data}

    def drain(self, most: int = 100_000) -> int:
        """Drop what is queued, undecoded (at most ``most`` messages, on a bus that never pauses);
        how many messages that was."""
        dropped = 0
        while dropped < most and self.sock.poll(0, zmq.POLLIN):
            self.sock.recv_multipart(copy=False)
            dropped += 1
        return dropped

    def iter(self, timeout: float | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while deadline is None or time.monotonic() < deadline:
            remaining = 1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            event = self.get(min(remaining, 1.0))
            if event is not None:
                yield event

    def wait_connected(self, sock_dir: str, timeout: float = 2.0) -> bool:
        """Make sure the subscription is live: fire probes until one comes back."""
        pusher = EventPusher(self.ctx, sock_dir)
        self.sock.setsockopt(zmq.SUBSCRIBE, PROBE_PREFIX.encode())
        try:
            deadline = time.monotonic() + timeout
            probe = f"{PROBE_PREFIX}{time.monotonic_ns()}"
            # the first probes usually go out before the subscription reaches the publisher and are
            # lost: wait 2 ms for an echo at first and back off to 50 ms (a 50 ms first wait cost
            # every `saltpan run` and every LocalClient job ~50 ms)
            wait = 0.002
            while time.monotonic() < deadline:
                pusher.fire(probe, {})
                event = self.get(wait)
                while event is not None:
                    if event[0] == probe:
                        return True
                    event = self.get(0.0)
                wait = min(0.05, wait * 2)
            return False
        finally:
            self.sock.setsockopt(zmq.UNSUBSCRIBE, PROBE_PREFIX.encode())
            pusher.close()

    def close(self) -> None:
        self.sock.close(linger=0)
