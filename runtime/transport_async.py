"""asyncio request client: many requests in flight over one DEALER, matched by request id.

For the minion's session, where heartbeats, returns and pillar requests run as concurrent tasks
(same framing as ``runtime.transport``: ``[b"", rid, body]`` out, the same back).  A request that
times out is retried with a fresh body from its factory; when nothing at all was received since
it was sent, the connection is presumed dead and replaced; requests still waiting on the old
connection keep it open until they are answered or time out, so their replies are not lost.

Closing the client ends every request still waiting with ``RequestClosed`` (a ``RequestTimeout``:
no reply will come), and later requests fail at once with it: a caller that keeps what it could
not deliver (the minion's job returns) keeps it, rather than losing it to a cancellation.

The sockets are plain ones read by a loop callback (``runtime.transport_loop``): a reply is handed
to its request's future as it arrives, without pyzmq's asyncio layer (a third of a minion's CPU
per job with it).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import TypeVar

import zmq
import zmq.asyncio

from runtime.transport import DEFAULT_LIMITS, RID_SIZE, RequestTimeout, SocketLimits, make_socket
from runtime.transport_loop import Dispatcher

T = TypeVar("T")


class RequestClosed(RequestTimeout):
    """The client was closed while the request waited (or before it was sent): no reply."""


class _Link:
    """One DEALER connection, its reader and the request ids still waiting on it."""

    __slots__ = ("sock", "reader", "waiting")

    def __init__(self, sock: zmq.Socket, reader: Dispatcher) -> None:
        self.sock = sock
        self.reader = reader
        self.waiting: set[bytes] = set()

    def close(self) -> None:
        self.reader.close()
        self.sock.close(linger=0)


def _expire(fut: asyncio.Future[bytes]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class AsyncRequestClient:
    def __init__(self, address: str, *, ctx: zmq.asyncio.Context | None = None, timeout: float = 5.0,
                 tries: int = 3, limits: SocketLimits = DEFAULT_LIMITS) -> None:
        if tries < 1 or timeout <= 0:
            raise ValueError("tries must be >= 1 and timeout > 0")
        self.address = address
        self.ctx = ctx or zmq.asyncio.Context.instance()
        self.timeout = timeout
        self.tries = tries
        self.limits = limits
        self.reconnects = 0
        self._link: _Link | None = None
        self._retired: list[_Link] = []    # replaced links that still have requests waiting on them
        self._pending: dict[bytes, asyncio.Future[bytes]] = {}
        self._last_rx = 0.0
        self._closed = False

    def _ensure(self) -> _Link:
        if self._link is None:
            sock = make_socket(self.ctx, zmq.DEALER, self.limits, plain=True)
            sock.connect(self.address)
            self._link = _Link(sock, Dispatcher(sock, self._on_reply))
        return self._link

    def _on_reply(self, frames: list[bytes]) -> None:
        self._last_rx = time.monotonic()
        if len(frames) != 3 or frames[0] != b"":
            return
        fut = self._pending.pop(frames[1], None)
        if fut is not None and not fut.done():
            fut.set_result(frames[2])

    def _reconnect(self) -> None:
        """Use a new connection from now on.  The old one keeps reading until the requests
        still waiting on it are answered or time out: a slow reply to one request (a pillar
        compile) must not be lost because another (a heartbeat) gave up on the connection."""
        link, self._link = self._link, None
        if link is None:
            return
        self.reconnects += 1
        if link.waiting:
            self._retired.append(link)
        else:
            link.close()

    def _done(self, link: _Link, rid: bytes) -> None:
        self._pending.pop(rid, None)
        link.waiting.discard(rid)
        if not link.waiting and link in self._retired:   # a retired link is never the current one
            self._retired.remove(link)
            link.close()

    async def request(self, body: bytes, *, timeout: float | None = None, tries: int | None = None) -> bytes:
        return (await self.request_with(lambda: (None, body), timeout=timeout, tries=tries))[1]

    async def request_with(self, make: Callable[[], tuple[T, bytes]], *, timeout: float | None = None,
                           tries: int | None = None) -> tuple[T, bytes]:
        """As ``RequestClient.request_with``: ``make()`` per attempt, returns the answered one's
        context and the reply body, or raises ``RequestTimeout``."""
        timeout = self.timeout if timeout is None else timeout
        tries = self.tries if tries is None else tries
        loop = asyncio.get_running_loop()
        for _attempt in range(tries):
            if self._closed:
                raise RequestClosed(f"the connection to {self.address} was closed; the request was not answered")
            context, body = make()
            rid = os.urandom(RID_SIZE)
            fut: asyncio.Future[bytes] = loop.create_future()
            self._pending[rid] = fut
            sent_at = time.monotonic()
            link = self._ensure()
            link.waiting.add(rid)
            try:
                await link.reader.send([b"", rid, body], timeout)
                expiry = loop.call_later(timeout, _expire, fut)
                try:
                    return context, await fut
                finally:
                    expiry.cancel()
            except (TimeoutError, zmq.Again):
                pass
            except zmq.ZMQError:
                if self._closed:         # the socket closed under a send waiting for room
                    raise RequestClosed(f"the connection to {self.address} was closed while the request was "
                                        "sent") from None
                raise
            finally:
                self._done(link, rid)
            if self._last_rx < sent_at and link is self._link:
                self._reconnect()
        raise RequestTimeout(f"no reply from {self.address} after {tries} tries of {timeout:g} s")

    def close(self) -> None:
        self._closed = True
        self._reconnect()
        for link in self._retired:
            link.close()
        self._retired.clear()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(RequestClosed(f"the connection to {self.address} was closed while the request "
                                                "waited for its reply"))
        self._pending.clear()
