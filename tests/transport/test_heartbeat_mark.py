"""A minion's heartbeats carry the heartbeat mark in their sealed header (docs/protocol.md §5); a
master from before the mark refuses such a header as ``malformed``. The minion's session then
sends its heartbeats unmarked, instead of losing the session at every heartbeat. Here the older
master is a ROUTER on 127.0.0.1 in front of a real ServerChannel that refuses marked headers as
the older parser did."""

from __future__ import annotations

import asyncio

from runtime import codec, protocol
from runtime.crypt.handshake import now_ms
from runtime.minion.session import Session
from runtime.transport_async import AsyncRequestClient
from runtime.transport_flows import sealed_head


def test_heartbeats_go_unmarked_to_a_master_that_refuses_the_mark(router, fleet_factory, tmp_path) -> None:
    fleet = fleet_factory(tmp_path)
    _, result, channel, server = fleet.accepted("web1")
    seen: list[bool] = []                    # whether each request was marked

    def older_master(frames: list[bytes]) -> list[bytes]:
        ident, empty, rid, body = frames
        marked = sealed_head(body)[1]
        seen.append(marked)
        if marked:
            reply = codec.pack_envelope(codec.ENC_CLEAR, codec.error_load(
                "malformed", "header must have exactly the fields v, sid, ctr, ts"))
        else:
            request = server.open_request(codec.unpack_envelope(body).load)
            reply = server.seal_reply(request, {"now": now_ms(), "heartbeat": 7.5, "epoch": 0, "publish_key": None})
        return [ident, empty, rid, reply]

    master = router(older_master)

    async def beat_twice() -> tuple[protocol.HeartbeatReply, protocol.HeartbeatReply, bool]:
        session = Session(AsyncRequestClient(master.endpoint, timeout=5.0, tries=1), channel, result, 5.0, 1)
        try:
            first = await session.request(protocol.Heartbeat(epoch=0))
            second = await session.request(protocol.Heartbeat(epoch=0))
            return first, second, session.mark_heartbeats
        finally:
            session.close()

    try:
        first, second, marking = asyncio.run(beat_twice())
    finally:
        fleet.store.close()
    assert first.heartbeat == second.heartbeat == 7.5
    assert seen == [True, False, False] and not marking
