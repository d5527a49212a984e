"""The ``EventPublisher`` process: the master's bus (``runtime.events``), and on a master sharing its
store, the bus's side of the cluster relay (``runtime.master.cluster``).

Every process of the master pushes ``[tag, data]`` to ``EVENT_PULL``; the EventPublisher publishes
it on ``EVENT_PUB`` to whoever subscribed (``saltpan event listen``, a waiting ``saltpan run``),
through libzmq's own proxy (``runtime.events.forward``) on a master of its own.

On a master in a cluster (``master_store: postgres``) it also:

* hands each event fired on this master (two frames) to the relay on ``EVENT_RELAY``, for the
  other masters; an event the relay fired from another master comes as ``[tag, data, RELAYED]``
  and is published only, never handed back (so the relay needs no subscription of its own, and
  no record of what it fired);
* publishes on an XPUB socket, which hears each topic's first subscription and last
  unsubscription, and tells the relay the topics listened to (``[SUBSCRIPTIONS, b"", packed
  list]``) at each change and every ``SNAPSHOT_S``: the relay then fires only the other masters'
  events someone here listens to, and a master nobody listens on costs the cluster nothing per event.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import zmq

from runtime import codec, events, transport
from runtime.events import EVENT_PUB, EVENT_PULL

EVENT_RELAY = "master_event_relay.ipc"
RELAYED = b"relayed"                 # third frame of an event the relay fired from another master
SUBSCRIPTIONS = b"\x00subscriptions"  # first frame of the topics-listened message to the relay
SNAPSHOT_S = 1.0                     # the topics are told at least this often (a relay that restarted)
RELAY_HWM = 100_000                  # events waiting for the relay (beyond: dropped, as on a full bus)


class Subscriptions:
    """The topics an XPUB socket has subscribers for, from the messages it receives (``\\x01topic``
    for a first subscription, ``\\x00topic`` for a last unsubscription)."""

    def __init__(self) -> None:
        self.topics: set[bytes] = set()

    def update(self, message: bytes) -> bool:
        """Apply one message; whether the set changed."""
        if not message or message[0] not in (0, 1):
            return False
        topic = message[1:]
        if message[0] == 1:
            if topic in self.topics:
                return False
            self.topics.add(topic)
        else:
            if topic not in self.topics:
                return False
            self.topics.discard(topic)
        return True

    def packed(self) -> bytes:
        return codec.pack(sorted(self.topics))


def unpack_topics(frame: bytes) -> frozenset[bytes] | None:
    """The topics of a SUBSCRIPTIONS message, None when it is not one."""
    try:
        topics = codec.unpack(frame)
    except codec.DecodeError:
        return None
    if not isinstance(topics, list) or not all(isinstance(t, bytes) for t in topics):
        return None
    return frozenset(topics)


def listened(topics: frozenset[bytes] | None, tag: bytes) -> bool:
    """Whether a subscriber of ``topics`` gets an event tagged ``tag`` (prefix match, as ZeroMQ's);
    None (not told yet) counts as listened."""
    return topics is None or any(tag.startswith(topic) for topic in topics)


def run(opts: dict[str, Any], stop: threading.Event, *, shared: bool) -> None:
    ctx = zmq.Context()
    pull = transport.make_socket(ctx, zmq.PULL)
    transport.bind(pull, transport.ipc_address(opts["sock_dir"], EVENT_PULL))
    pub = transport.make_socket(ctx, zmq.XPUB if shared else zmq.PUB, transport.SocketLimits(sndhwm=100_000))
    transport.bind(pub, transport.ipc_address(opts["sock_dir"], EVENT_PUB))
    try:
        if shared:
            _serve_cluster(ctx, pull, pub, opts, stop)
        else:
            events.forward(ctx, pull, pub, stop)     # libzmq's proxy: no Python per event
    finally:
        pull.close(linger=0)
        pub.close(linger=0)
        ctx.term()


def _serve_cluster(ctx: zmq.Context, pull: zmq.Socket, pub: zmq.Socket, opts: dict[str, Any],
                   stop: threading.Event) -> None:
    relay = transport.make_socket(ctx, zmq.PUSH, transport.SocketLimits(sndhwm=RELAY_HWM))
    transport.bind(relay, transport.ipc_address(opts["sock_dir"], EVENT_RELAY))
    subscriptions = Subscriptions()
    poller = zmq.Poller()
    poller.register(pull, zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)
    told = 0.0
    try:
        while not stop.is_set():
            ready = dict(poller.poll(200))
            if pub in ready:
                changed = False
                for _ in range(1000):
                    try:
                        changed = subscriptions.update(pub.recv(zmq.NOBLOCK)) or changed
                    except zmq.Again:
                        break
                if changed:
                    told = 0.0
            if time.monotonic() - told >= SNAPSHOT_S:
                try:
                    relay.send_multipart([SUBSCRIPTIONS, b"", subscriptions.packed()], zmq.NOBLOCK)
                    told = time.monotonic()
                except zmq.Again:
                    pass
            if pull not in ready:
                continue
            # plain-int flags and no exception per empty read (transport.send_parts): per event
            for _ in range(1000):
                if not transport.readable(pull):
                    break
                frames = transport.recv_parts(pull, transport.NOBLOCK, max_frames=3)
                if frames is None:
                    continue
                if len(frames) == 3 and frames[2] == RELAYED:
                    frames = frames[:2]
                elif len(frames) != 2:
                    continue
                else:
                    try:
                        transport.send_parts(relay, frames, transport.NOBLOCK)
                    except zmq.Again:
                        pass
                try:
                    transport.send_parts(pub, frames, transport.NOBLOCK)
                except zmq.Again:
                    pass
    finally:
        relay.close(linger=0)
