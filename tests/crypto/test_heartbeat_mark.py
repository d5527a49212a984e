"""A minion's heartbeats carry the heartbeat mark in their sealed header (docs/protocol.md §5); a
master from before the mark refuses such a header as ``malformed``. The minion's session then
sends its heartbeats unmarked, instead of losing the session at every heartbeat. Here the older
master is a ROUTER socket on 127.0.0.1 in front of a real ServerChannel that refuses marked
headers as the older parser did."""

from __future__ import annotations

import asyncio
import threading

import zmq

from runtime import codec, protocol
from runtime.crypt.channel import ServerChannel
from runtime.crypt.handshake import now_ms
from runtime.minion.session import Session
from runtime.transport_async import AsyncRequestClient
from runtime.transport_flows import sealed_head


class OlderMaster:
    """Answers sealed heartbeats; a marked header gets the older parser's clear refusal."""

    def __init__(self, server: ServerChannel) -> None:
        self.server = server
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.seen: list[bool] = []          # whether each request was marked
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            ident, empty, rid, body = self.sock.recv_multipart()
            marked = sealed_head(body)[1]
            self.seen.append(marked)
            if marked:
                reply = codec.pack_envelope(codec.ENC_CLEAR, codec.error_load(
                    "malformed", "header must have exactly the fields v, sid, ctr, ts"))
            else:
                request = self.server.open_request(codec.unpack_envelope(body).load)
                reply = self.server.seal_reply(request, {"now": now_ms(), "heartbeat": 7.5, "epoch": 0,
                                                         "publish_key": None})
            self.sock.send_multipart([ident, empty, rid, reply])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close(linger=0)
        self.ctx.term()


def test_heartbeats_go_unmarked_to_a_master_that_refuses_the_mark(fleet) -> None:
    _, result, channel, server = fleet.accepted("web1")
    master = OlderMaster(server)

    async def beat_twice() -> tuple[protocol.HeartbeatReply, protocol.HeartbeatReply, bool]:
        client = AsyncRequestClient(f"tcp://127.0.0.1:{master.port}", timeout=5.0, tries=1)
        session = Session(client, channel, result, 5.0, 1)
        try:
            first = await session.request(protocol.Heartbeat(epoch=0))
            second = await session.request(protocol.Heartbeat(epoch=0))
            return first, second, session.mark_heartbeats
        finally:
            session.close()

    try:
        first, second, marking = asyncio.run(beat_twice())
    finally:
        master.close()
    assert first.heartbeat == second.heartbeat == 7.5
    assert master.seen == [True, False, False] and not marking
