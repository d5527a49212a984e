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
            pub.close(linger=0)
            await asyncio.wait_for(waiting, 5)
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
