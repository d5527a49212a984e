"""Plain ZeroMQ sockets read from the running asyncio loop, without pyzmq's asyncio layer.

``zmq.asyncio`` makes a future for every receive and send, switches the loop's reader on and off
around each one, and reads ``ZMQ_EVENTS`` through enum flags every time: on a minion it was about
a third of the CPU of a ``test.ping`` (two receives and one send per job).  Here a socket is a
plain ``zmq.Socket``; the loop watches its ``ZMQ_FD`` with one reader callback for the socket's
whole life, and messages are taken with non-blocking receives.

``ZMQ_FD`` is a notification, not a readiness flag: it becomes readable when libzmq has commands
for the socket (a peer's message among them) and stops being readable once they are processed,
which any non-blocking receive that finds nothing, and every read of ``ZMQ_EVENTS``, does.  So:

* a reader drains until ``ZMQ_EVENTS`` says nothing is left (a receive that finds nothing would
  clear it too, but raises ``zmq.Again``, which costs more than the receive), so the descriptor
  never stays readable with nobody to clear it (the loop would spin);
* a send may process those commands too, taking the notification of a reply that arrived
  meanwhile: after each send, ``ZMQ_EVENTS`` is read and a pending message drained.

:class:`Inbox` hands messages to one consumer at a time (``await recv()``), leaving them in
libzmq's queue (bounded by its high-water mark) until asked for (one of more than
``transport.MAX_FRAMES`` frames comes out empty); :class:`Dispatcher` hands each
message to a callback as soon as it arrives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import zmq

from runtime.transport import NOBLOCK, readable, recv_parts, send_parts

DRAIN_BATCH = 64            # messages a dispatcher takes per wake-up before letting others run
SEND_RETRY_FIRST_S = 0.002  # a full send queue is tried again after this, doubling ...
SEND_RETRY_MAX_S = 0.05     # ... up to this


class Dispatcher:
    """Every message of ``sock`` goes to ``on_message`` (a plain function, called on the loop) as
    soon as it arrives (but one of more than ``transport.MAX_FRAMES`` frames, dropped).  Call :meth:`close` before closing the socket."""

    __slots__ = ("sock", "loop", "on_message", "_fd", "_closed")

    def __init__(self, sock: zmq.Socket, on_message: Callable[[list[bytes]], None],
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.sock = sock
        self.loop = loop or asyncio.get_running_loop()
        self.on_message = on_message
        self._fd = int(sock.getsockopt(zmq.FD))
        self._closed = False
        self.loop.add_reader(self._fd, self.drain)
        self.loop.call_soon(self.drain)   # whatever came before the reader was added

    def drain(self) -> None:
        if self._closed:
            return
        sock = self.sock
        for _ in range(DRAIN_BATCH):
            try:
                # asking ZMQ_EVENTS clears the notification as a receive that finds nothing does,
                # without the exception (zmq.Again) that costs more than the receive
                if not readable(sock):
                    return
                frames = recv_parts(sock, NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:          # closed under us
                self.close()
                return
            if frames is not None:        # None: too many frames (dropped)
                self.on_message(frames)
            if self._closed:
                return
        self.loop.call_soon(self.drain)   # more may be queued: after whatever else is ready

    async def send(self, frames: list[bytes], timeout: float) -> None:
        """Send without blocking the loop; raises ``zmq.Again`` when the socket's queue stays full
        for ``timeout`` seconds."""
        await send_frames(self.sock, frames, timeout)
        self.after_send()

    def after_send(self) -> None:
        """A send may have taken the notification of a message that arrived: look for it."""
        if not self._closed and readable(self.sock):
            self.loop.call_soon(self.drain)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.loop.remove_reader(self._fd)


class Inbox:
    """``await recv()`` for one consumer at a time; messages wait in libzmq's queue until then.
    Registers with the running loop at the first :meth:`recv`.  Call :meth:`close` before
    closing the socket."""

    __slots__ = ("sock", "loop", "_fd", "_waiter", "_closed")

    def __init__(self, sock: zmq.Socket) -> None:
        self.sock = sock
        self.loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1
        self._waiter: asyncio.Future[list[bytes]] | None = None
        self._closed = False

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            # nobody waits: take libzmq's notification (the descriptor would stay readable and
            # the loop spin); the message stays queued for the next recv()
            try:
                self.sock.getsockopt(zmq.EVENTS)
            except zmq.ZMQError:
                self.close()
            return
        try:
            if not readable(self.sock):
                return
            frames = recv_parts(self.sock, NOBLOCK)
        except zmq.Again:
            return
        except zmq.ZMQError as exc:
            self._waiter = None
            waiter.set_exception(exc)
            self.close()
            return
        self._waiter = None
        waiter.set_result(frames if frames is not None else [])   # too many frames: an empty message

    async def recv(self) -> list[bytes]:
        """The next message (its frames)."""
        if self._closed:
            raise zmq.ZMQError(zmq.ENOTSOCK, "the socket was closed")
        try:
            if readable(self.sock):
                frames = recv_parts(self.sock, NOBLOCK)
                return frames if frames is not None else []   # too many frames: an empty message
        except zmq.Again:
            pass
        # libzmq said "empty", so the next message will notify the descriptor
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._fd = int(self.sock.getsockopt(zmq.FD))
            self.loop.add_reader(self._fd, self._wake)
        waiter = self.loop.create_future()
        self._waiter = waiter
        try:
            return await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.loop is not None:
            self.loop.remove_reader(self._fd)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.cancel()


async def send_frames(sock: zmq.Socket, frames: list[bytes], timeout: float) -> None:
    """Send ``frames`` without blocking the loop: at once when the queue has room (always, but for
    a peer that stopped reading), else tried again with a growing pause; ``zmq.Again`` after
    ``timeout`` seconds."""
    try:
        send_parts(sock, frames, NOBLOCK)
        return
    except zmq.Again:
        pass
    deadline = time.monotonic() + timeout
    pause = SEND_RETRY_FIRST_S
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise zmq.Again()
        await asyncio.sleep(min(pause, remaining))
        pause = min(pause * 2, SEND_RETRY_MAX_S)
        try:
            send_parts(sock, frames, NOBLOCK)
            return
        except zmq.Again:
            continue
