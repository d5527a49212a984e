"""A hello refused as busy is sent again on the same connection (runtime/minion/session.py):
10,000 minions launched at once were refused 24,000 times, and each refusal cost a TCP
connection opened and closed on both sides."""

from __future__ import annotations

import asyncio
import threading

import pytest
import zmq
import zmq.asyncio

from runtime import codec, protocol
from runtime.minion.session import MasterBusy, authenticate

OPTS = {"auth_timeout": 5.0, "auth_tries": 1, "acceptance_wait_time": 1.0, "acceptance_wait_time_max": 0.0,
        "request_timeout": 5.0, "request_tries": 1}


def serve(router: zmq.Socket, answers: list[str], fleet, seen: list[bytes]) -> None:
    """Answer one hello per entry of ``answers``: ``busy`` as the request proxy refuses one, or
    ``auth`` with the master's auth service; record the connection (ROUTER identity) of each."""
    for answer in answers:
        if not router.poll(10_000):
            return
        ident, empty, rid, body = router.recv_multipart()
        seen.append(ident)
        if answer == "busy":
            reply = codec.pack_envelope(codec.ENC_CLEAR, codec.error_load("busy", "request refused: busy"))
        else:
            hello = protocol.AuthHello.from_wire(codec.unpack_envelope(body).load)
            reply = codec.pack_envelope(codec.ENC_CLEAR, fleet.auth.handle(hello.to_wire()).reply)
        router.send_multipart([ident, empty, rid, reply])


@pytest.mark.parametrize("answers", [["busy", "auth"], ["busy", "busy", "busy", "auth"]])
def test_a_hello_refused_busy_is_sent_again_on_its_connection(fleet, answers: list[str]) -> None:
    from runtime.crypt.identity import Identity

    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    ctx = zmq.asyncio.Context()
    server_ctx = zmq.Context()
    router = server_ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    seen: list[bytes] = []
    server = threading.Thread(target=serve, args=(router, answers, fleet, seen), daemon=True)
    server.start()
    address = f"tcp://127.0.0.1:{port}"

    async def minion_side() -> str:
        stop = asyncio.Event()
        client = None
        while True:
            try:
                session = await authenticate(address, minion, "web1", fleet.trust("web1"), OPTS, stop, ctx,
                                             client=client)
            except MasterBusy as exc:
                client = exc.client
                continue
            outcome = session.result.outcome
            session.close()
            return outcome

    try:
        assert asyncio.run(asyncio.wait_for(minion_side(), 20)) == "accepted"
        server.join(10)
        assert len(seen) == len(answers)
        assert len(set(seen)) == 1, seen           # one connection for every hello
    finally:
        router.close(linger=0)
        server_ctx.term()
        ctx.destroy(linger=0)


def test_a_spare_connection_to_another_address_is_closed_and_replaced(fleet) -> None:
    from runtime.crypt.identity import Identity
    from runtime.transport_async import AsyncRequestClient

    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    ctx = zmq.asyncio.Context()
    server_ctx = zmq.Context()
    router = server_ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    seen: list[bytes] = []
    server = threading.Thread(target=serve, args=(router, ["auth"], fleet, seen), daemon=True)
    server.start()

    async def minion_side() -> tuple[str, bool]:
        stale = AsyncRequestClient("tcp://127.0.0.1:9", ctx=ctx)     # a spare of another master
        session = await authenticate(f"tcp://127.0.0.1:{port}", minion, "web1", fleet.trust("web1"), OPTS,
                                     asyncio.Event(), ctx, client=stale)
        try:
            return session.result.outcome, session.client is stale
        finally:
            session.close()

    try:
        outcome, reused = asyncio.run(asyncio.wait_for(minion_side(), 20))
        assert outcome == "accepted" and not reused
    finally:
        router.close(linger=0)
        server_ctx.term()
        ctx.destroy(linger=0)
