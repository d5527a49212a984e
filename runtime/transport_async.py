"""asyncio request client: many requests in flight over one DEALER, matched by request id.

For the minion's session, where heartbeats, returns and pillar requests run as concurrent tasks
(same framing as ``runtime.transport``: ``[b"", rid, body]`` out, the same back).  A request that
times out is retried with a fresh body from its factory; when nothing at all was received since
it was sent, the connection is presumed dead and replaced (other requests still waiting on the
old socket time out and retry on the new one).
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

T = TypeVar("T")


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
        self._sock: zmq.asyncio.Socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[bytes, asyncio.Future[bytes]] = {}
        self._last_rx = 0.0

    def _ensure(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            sock = make_socket(self.ctx, zmq.DEALER, self.limits)
            sock.connect(self.address)
            self._sock = sock
            self._reader = asyncio.get_running_loop().create_task(self._read(sock))
        return self._sock

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            try:
                frames = await sock.recv_multipart()
            except (zmq.ZMQError, asyncio.CancelledError):
                return
            self._last_rx = time.monotonic()
            if len(frames) != 3 or frames[0] != b"":
                continue
            fut = self._pending.pop(frames[1], None)
            if fut is not None and not fut.done():
                fut.set_result(frames[2])

    def _reconnect(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
            self.reconnects += 1

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
            context, body = make()
            rid = os.urandom(RID_SIZE)
            fut: asyncio.Future[bytes] = loop.create_future()
            self._pending[rid] = fut
            sent_at = time.monotonic()
            try:
                sock = self._ensure()
                await asyncio.wait_for(sock.send_multipart([b"", rid, body]), timeout)
                return context, await asyncio.wait_for(fut, timeout)
            except (TimeoutError, zmq.Again):
                pass
            finally:
                self._pending.pop(rid, None)
            if self._last_rx < sent_at:
                self._reconnect()
        raise RequestTimeout(f"no reply from {self.address} after {tries} tries of {timeout:g} s")

    def close(self) -> None:
        self._reconnect()
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()
