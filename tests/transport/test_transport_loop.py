"""runtime.transport_loop: plain ZeroMQ sockets read by the asyncio loop (real sockets on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import zmq
import zmq.asyncio

from runtime.transport import SocketLimits, bind, make_socket, make_subscriber, tcp_address
from runtime.transport_loop import Dispatcher, Inbox, send_frames


@pytest.fixture
def actx():
    context = zmq.asyncio.Context()
    yield context
    context.destroy(linger=0)


def test_inbox_takes_bursts_and_waits_in_between(actx):
    """Messages published in bursts (some while nobody waits, some while a recv waits) all come
    out once, in order: no notification is lost, whoever took it."""
    pub = make_socket(actx, zmq.PUB, plain=True)
    endpoint = bind(pub, tcp_address("127.0.0.1", 0))
    sub = make_subscriber(actx, endpoint, plain=True)
    inbox = Inbox(sub)

    async def main() -> list[int]:
        for _ in range(200):                      # the subscription reaches the publisher
            pub.send_multipart([b"all", b"probe"])
            try:
                await asyncio.wait_for(inbox.recv(), 0.02)
                break
            except TimeoutError:
                continue
        while True:                               # drop the extra probes
            try:
                await asyncio.wait_for(inbox.recv(), 0.05)
            except TimeoutError:
                break
        got: list[int] = []

        async def publisher() -> None:
            n = 0
            for burst in (1, 50, 3, 200, 1, 1, 30):
                for _ in range(burst):
                    pub.send_multipart([b"all", str(n).encode()])
                    n += 1
                await asyncio.sleep(0.01)

        sender = asyncio.create_task(publisher())
        while len(got) < 286:
            frames = await asyncio.wait_for(inbox.recv(), 5)
            got.append(int(frames[1]))
            if len(got) % 7 == 0:
                await asyncio.sleep(0.002)       # sometimes nobody waits when messages come
        await sender
        return got

    try:
        assert asyncio.run(main()) == list(range(286))
    finally:
        inbox.close()
        sub.close(linger=0)
        pub.close(linger=0)


def test_inbox_close_ends_a_waiting_recv(actx):
    sub = make_subscriber(actx, "tcp://127.0.0.1:9", plain=True)
    inbox = Inbox(sub)

    async def main() -> None:
        waiting = asyncio.create_task(inbox.recv())
        await asyncio.sleep(0.05)
        inbox.close()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with pytest.raises(zmq.ZMQError):
            await inbox.recv()

    try:
        asyncio.run(main())
    finally:
        sub.close(linger=0)


def test_dispatcher_hands_every_reply_to_its_callback(actx):
    """Many requests in flight, replies coming back while more are sent (a send may take the
    notification of a reply: the dispatcher looks after each send)."""
    server = make_socket(actx, zmq.ROUTER, plain=True)
    endpoint = bind(server, tcp_address("127.0.0.1", 0))
    stop = threading.Event()

    def echo() -> None:
        while not stop.is_set():
            if server.poll(5):
                ident, body = server.recv_multipart()
                server.send_multipart([ident, b"re:" + body])

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    client = make_socket(actx, zmq.DEALER, plain=True)
    client.connect(endpoint)

    async def main() -> list[bytes]:
        replies: list[bytes] = []
        done = asyncio.Event()

        def on_message(frames: list[bytes]) -> None:
            replies.append(frames[0])
            if len(replies) == 500:
                done.set()

        reader = Dispatcher(client, on_message)
        for n in range(500):
            await reader.send([b"%d" % n], 2.0)
            if n % 50 == 0:
                await asyncio.sleep(0.001)
        await asyncio.wait_for(done.wait(), 10)
        reader.close()
        return replies

    try:
        replies = asyncio.run(main())
        assert sorted(replies) == sorted(b"re:%d" % n for n in range(500))
    finally:
        stop.set()
        thread.join(5)
        client.close(linger=0)
        server.close(linger=0)


def test_send_to_a_full_queue_gives_up_after_its_timeout(actx):
    """Nobody listens and the queue (high-water mark 1) is full: the send waits without blocking
    the loop, then raises zmq.Again."""
    sock = make_socket(actx, zmq.DEALER, SocketLimits(sndhwm=1), plain=True)
    sock.connect("tcp://127.0.0.1:9")

    async def main() -> float:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        running = asyncio.create_task(ticker())
        start = time.monotonic()
        with pytest.raises(zmq.Again):
            for _ in range(10):
                await send_frames(sock, [b"x"], 0.3)
        elapsed = time.monotonic() - start
        running.cancel()
        assert ticks >= 10, "the loop kept running while the send waited"
        return elapsed

    try:
        assert 0.25 <= asyncio.run(main()) < 2.0
    finally:
        sock.close(linger=0)
