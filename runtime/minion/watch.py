"""A minion's subscriber to its master's publish port, kept across sessions, and what it makes of
the master's boot announcements (runtime/crypt/announce.py).

One subscriber per master address lives as long as the minion talks to that master: during a
session it carries the jobs, between sessions (while the minion backs off) it listens only for
an announcement.  ZeroMQ reconnects it by itself when the master comes back (every 100 ms, at
most every ``RECONNECT_MAX_MS``), the master's XPUB sees the subscriptions, among them the hint of
the minion's last session (``answered``: the master's clock in its last auth reply), announces
itself when that session belonged to an earlier run, and the minion learns at once that its
master restarted, instead of at its next heartbeat.  A minion process that never had a session
with this master sends no hint (nothing of it was lost; its reconnect backoff paces its hellos):
otherwise a fleet's first launch, or a fleet of minions restarting, would make an announcement
due with every subscriber, each one copied to all of them.

A verified announcement means "the master restarted" when its ``started`` time is later than the
last time that master answered this minion (``last_answer_ms``, the master's clock in its last
auth reply): the sessions of an earlier run are gone.  Each boot identity is acted on once.  A
replayed announcement therefore does nothing: an older boot started before the master last
answered, the current one was acted on (or answered us) already; a forged one fails its signature.

``disconnected()`` reports the subscriber's connection dropping (a ZeroMQ socket monitor): a
master whose process died closes it at once.  A minion with a failover list uses it to check its
master now instead of at the next heartbeat (runtime/minion/daemon.py), and ``link_up`` (the
connection as the monitor last saw it) to tell a master that is slow to answer (its process holds
the connection) from one that is gone.
"""

from __future__ import annotations

import collections
import logging
from typing import cast

import zmq
import zmq.asyncio

from runtime import transport
from runtime.crypt.announce import (
    ANNOUNCE_TOPIC,
    Announcement,
    AnnouncementRefused,
    hint_topic,
    open_announcement,
    peek_announcement,
)
from runtime.transport_loop import Inbox

log = logging.getLogger("saltpan.minion.watch")

RECONNECT_MAX_MS = 500
_LIMITS = transport.SocketLimits(reconnect_ivl_max_ms=RECONNECT_MAX_MS)


class MasterWatch:
    def __init__(self, ctx: zmq.asyncio.Context, address: str, minion_id: str) -> None:
        self.address = address
        # a plain socket read by a loop callback (runtime.transport_loop), not pyzmq's asyncio layer
        self.sub = transport.make_subscriber(ctx, address, minion_id, _LIMITS, plain=True)
        self.sub.setsockopt(zmq.SUBSCRIBE, ANNOUNCE_TOPIC)
        self.inbox = Inbox(self.sub)
        self.last_answer_ms = 0               # master clock, last auth reply of this master
        self.acted: collections.deque[bytes] = collections.deque(maxlen=16)
        self.refused = 0
        self._monitor: zmq.asyncio.Socket | None = None
        # the publish connection as the monitor last reported it; up until it reports a drop (the
        # monitor starts after the first session's hello, so it may miss the first connect)
        self.link_up = True

    async def recv(self) -> tuple[bytes, bytes] | None:
        """The next (topic, body), or None for a message that is not two frames."""
        frames = await self.inbox.recv()
        if len(frames) != 2:
            return None
        return frames[0], frames[1]

    def answered(self, master_now_ms: int) -> None:
        """The master answered an auth hello at ``master_now_ms`` (its clock).  The subscriber's
        hint moves with it: should the master restart, the subscription the subscriber sends
        again on reconnecting tells it that this minion's session belonged to the earlier run."""
        previous = self.last_answer_ms
        self.last_answer_ms = max(previous, master_now_ms)
        if self.last_answer_ms != previous:
            if previous:
                self.sub.setsockopt(zmq.UNSUBSCRIBE, hint_topic(previous))
            self.sub.setsockopt(zmq.SUBSCRIBE, hint_topic(self.last_answer_ms))

    def restarted(self, body: bytes, master_pub: bytes | None, clock_offset_ms: int) -> Announcement | None:
        """The announcement in ``body`` when it says the master restarted since it last answered
        us (and this boot was not acted on yet), else None.  Refused ones are counted, never used."""
        if master_pub is None:       # never authenticated: no key to check it with
            return None
        claimed = peek_announcement(body)
        if claimed is not None and (claimed[1] <= self.last_answer_ms or claimed[0] in self.acted):
            return None              # ignored whether genuine or not: no need to verify it
        try:
            announcement = open_announcement(master_pub, body, clock_offset_ms=clock_offset_ms)
        except AnnouncementRefused as exc:
            self.refused += 1
            log.debug("announcement from %s ignored: %s", self.address, exc)
            return None
        if announcement.started_ms <= self.last_answer_ms or announcement.boot in self.acted:
            return None
        self.acted.append(announcement.boot)
        return announcement

    async def disconnected(self) -> None:
        """Return when the connection to the master's publish port drops (``link_up`` follows the
        connects and drops the monitor reports meanwhile)."""
        if self._monitor is None:
            # made by the socket's context, an asyncio one: so is this PAIR (rare events: pyzmq's layer is fine)
            self._monitor = cast(zmq.asyncio.Socket,
                                 self.sub.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED))
        while True:
            frames = await self._monitor.recv_multipart()
            if len(frames) != 2 or len(frames[0]) < 2:
                continue
            event = int.from_bytes(frames[0][:2], "little")
            if event == zmq.EVENT_CONNECTED:
                self.link_up = True
            elif event == zmq.EVENT_DISCONNECTED:
                self.link_up = False
                return

    @staticmethod
    def is_announcement(topic: bytes) -> bool:
        return topic == ANNOUNCE_TOPIC

    def close(self) -> None:
        if self._monitor is not None:
            try:
                self.sub.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None
        self.inbox.close()
        self.sub.close(linger=0)
