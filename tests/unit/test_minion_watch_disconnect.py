"""The minion's subscriber notices its master's publish port going away (issue 21, failover): a
real XPUB on 127.0.0.1 closed as a killed master's would be; ``MasterWatch.disconnected`` returns."""

from __future__ import annotations

import asyncio

import pytest
import zmq
import zmq.asyncio

from runtime.minion.watch import MasterWatch
from runtime.transport import bind, tcp_address


def test_disconnected_returns_when_the_publisher_goes_away() -> None:
    async def main() -> None:
        ctx = zmq.asyncio.Context()
        pub = ctx.socket(zmq.XPUB)
        endpoint = bind(pub, tcp_address("127.0.0.1", 0))
        watch = MasterWatch(ctx, endpoint, "fo1")
        try:
            # connected: the master's XPUB sees the watch's subscription
            assert await asyncio.wait_for(pub.recv(), 5)
            waiting = asyncio.create_task(watch.disconnected())
            await asyncio.sleep(0.2)
            assert not waiting.done()                 # nothing dropped while the master is there
            assert watch.link_up
            pub.close(linger=0)
            await asyncio.wait_for(waiting, 5)
            assert not watch.link_up                  # the heartbeat no longer gives it time
        finally:
            watch.close()
            if not pub.closed:
                pub.close(linger=0)
            ctx.term()

    asyncio.run(main())


def test_close_without_monitor_and_with_one() -> None:
    async def main() -> None:
        ctx = zmq.asyncio.Context()
        quiet = MasterWatch(ctx, "tcp://127.0.0.1:9", "fo1")
        quiet.close()
        watched = MasterWatch(ctx, "tcp://127.0.0.1:9", "fo2")
        task = asyncio.create_task(watched.disconnected())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        watched.close()
        ctx.term()

    asyncio.run(main())


def test_link_up_again_when_the_master_comes_back_on_the_same_port() -> None:
    async def main() -> None:
        ctx = zmq.asyncio.Context()
        pub = ctx.socket(zmq.XPUB)
        endpoint = bind(pub, tcp_address("127.0.0.1", 0))
        watch = MasterWatch(ctx, endpoint, "fo1")
        again: zmq.asyncio.Socket | None = None
        try:
            assert await asyncio.wait_for(pub.recv(), 5)
            waiting = asyncio.create_task(watch.disconnected())
            await asyncio.sleep(0.1)
            pub.close(linger=0)
            await asyncio.wait_for(waiting, 5)
            assert not watch.link_up
            again = ctx.socket(zmq.XPUB)              # a restarted master on the same port
            again.bind(endpoint)
            watching = asyncio.create_task(watch.disconnected())
            for _ in range(100):            # ZeroMQ reconnects within RECONNECT_MAX_MS
                if watch.link_up:
                    break
                await asyncio.sleep(0.05)
            assert watch.link_up and not watching.done()
            watching.cancel()
        finally:
            watch.close()
            for sock in (pub, again):
                if sock is not None and not sock.closed:
                    sock.close(linger=0)
            ctx.term()

    asyncio.run(main())
