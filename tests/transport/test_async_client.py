"""AsyncRequestClient: concurrent requests over one socket, matched by id; timeouts and retries."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import zmq

from runtime.transport import RequestTimeout, bind, make_socket, tcp_address
from runtime.transport_async import AsyncRequestClient, RequestClosed


class DelayedEcho:
    """A ROUTER on 127.0.0.1 answering ``b"<delay ms>:<x>"`` after the delay (negative: never), out
    of order; one thread owns the socket."""

    def __init__(self, ctx):
        self.sock = make_socket(ctx, zmq.ROUTER)
        self.endpoint = bind(self.sock, tcp_address("127.0.0.1", 0))
        self.pending = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            if self.sock.poll(5):
                ident, empty, rid, body = self.sock.recv_multipart()
                delay = int(body.split(b":")[0]) / 1000
                if delay >= 0:
                    self.pending.append((time.monotonic() + delay, [ident, empty, rid, b"re:" + body]))
            now = time.monotonic()
            for item in [p for p in self.pending if p[0] <= now]:
                self.pending.remove(item)
                self.sock.send_multipart(item[1])

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close(linger=0)


@pytest.fixture
def echo(ctx):
    server = DelayedEcho(ctx)
    yield server
    server.close()


@pytest.fixture
def actx():
    import zmq.asyncio
    context = zmq.asyncio.Context()
    yield context
    context.destroy(linger=0)


def test_concurrent_requests_complete_out_of_order(echo, actx):

    async def main():
        client = AsyncRequestClient(echo.endpoint, ctx=actx, timeout=3)
        order = []

        async def one(delay):
            reply = await client.request(b"%d:x" % delay)
            order.append(reply)

        start = time.monotonic()
        await asyncio.gather(one(300), one(10), one(150))
        elapsed = time.monotonic() - start
        client.close()
        return order, elapsed

    order, elapsed = asyncio.run(main())
    assert order == [b"re:10:x", b"re:150:x", b"re:300:x"]
    assert elapsed < 1.0, "requests ran concurrently, not one after another"


def test_timeout_retry_then_give_up(echo, actx):

    async def main():
        client = AsyncRequestClient(echo.endpoint, ctx=actx, timeout=0.2, tries=2)
        attempts = []

        def make():
            attempts.append(1)
            return len(attempts), b"-1:silent" if len(attempts) == 1 else b"0:answer"

        context, reply = await client.request_with(make)
        assert (context, reply) == (2, b"re:0:answer")
        assert client.reconnects == 1
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.request(b"-1:never", tries=3)
        assert time.monotonic() - start < 2
        client.close()

    asyncio.run(main())


def test_a_slow_reply_survives_another_requests_reconnect(echo, actx):
    """A heartbeat that gives up while the master is busy replaces the connection; the pillar
    request already waiting on the old one must still get its (slow) reply, not time out."""

    async def main():
        client = AsyncRequestClient(echo.endpoint, ctx=actx, timeout=3, tries=1)
        slow = asyncio.create_task(client.request(b"800:pillar"))
        await asyncio.sleep(0.05)
        with pytest.raises(RequestTimeout):
            await client.request(b"-1:heartbeat", timeout=0.2)
        assert client.reconnects == 1
        start = time.monotonic()
        assert await slow == b"re:800:pillar"
        assert time.monotonic() - start < 1.0
        # the replaced connection closed once nothing waited on it; the new one works
        assert client._retired == []
        assert await client.request(b"0:next") == b"re:0:next"
        client.close()

    asyncio.run(main())


def test_close_ends_a_waiting_request_with_request_closed_not_a_cancellation(echo, actx):
    """The minion closes a session when its master dies; a job return waiting for the dead master's
    reply must come back as an undelivered request (kept and resent through the next master), not
    be cancelled with the task that sends it."""

    async def main():
        client = AsyncRequestClient(echo.endpoint, ctx=actx, timeout=3, tries=2)
        waiting = asyncio.create_task(client.request(b"-1:return"))
        await asyncio.sleep(0.1)
        client.close()
        with pytest.raises(RequestClosed) as info:
            await waiting
        assert isinstance(info.value, RequestTimeout)
        assert not waiting.cancelled()
        start = time.monotonic()
        with pytest.raises(RequestClosed):               # no new connection to the closed address
            await client.request(b"0:after")
        assert time.monotonic() - start < 0.1
        assert client._link is None

    asyncio.run(main())
