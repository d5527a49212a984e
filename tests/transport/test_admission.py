"""Admission of hellos by the request proxy, with real sockets on 127.0.0.1: while the minions'
queued requests are more work than ``admission_backlog_s``, hellos wait, and one that waited its
lane's ``max_wait_s`` is answered ``busy`` while its minion still listens (not dropped)."""

from __future__ import annotations

import time

import pytest
import zmq

from runtime import codec
from runtime.transport import WorkerRequest, WorkerSocket, make_socket
from runtime.transport_fair import FairLimits, Lane
from tests.transport.proxy_harness import ProxyHarness, harness_factory

WORK_S = 0.05


class SlowMaster(ProxyHarness):
    """One worker taking WORK_S a request; it notes the kind of each request it is handed."""

    def __init__(self, ctx: zmq.Context, sock_dir: str, limits: FairLimits) -> None:
        self.seen: list[str] = []
        super().__init__(ctx, sock_dir, 1, limits=limits)

    def serve(self, sock: WorkerSocket, request: WorkerRequest) -> None:
        self.seen.append(codec.unpack_envelope(request.body).enc)
        time.sleep(WORK_S)
        sock.reply(request, codec.pack_envelope("clear", {"ok": True}))


@pytest.fixture
def master(ctx, tmp_path):
    yield from harness_factory(SlowMaster, ctx, tmp_path)


def test_a_hello_held_back_by_admission_is_answered_busy_before_its_minion_gives_up(ctx, master) -> None:
    max_wait = {**FairLimits().max_wait_s, Lane.AUTH: 0.5}
    server = master(FairLimits(admission_backlog_s=0.2, max_wait_s=max_wait))
    sealed = codec.pack_envelope("aes", {"h": b"h" * 40, "ct": b"c" * 100})
    hello = codec.pack_envelope("clear", {"cmd": "_auth"})
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    try:
        for i in range(40):                         # 2 s of the worker's time
            raw.send_multipart([b"", b"sealed%02d" % i, sealed])
        time.sleep(0.4)                             # the lane's cost is known: the backlog is over 0.2 s
        sent = time.monotonic()
        for i in range(5):
            raw.send_multipart([b"", b"hello%03d" % i, hello])
        answered: dict[bytes, tuple[float, dict]] = {}
        while len(answered) < 45 and raw.poll(5000):
            _, rid, body = raw.recv_multipart()
            answered[rid] = (time.monotonic() - sent, codec.unpack_envelope(body).load)
        hellos = {rid: answer for rid, answer in answered.items() if rid.startswith(b"hello")}
        assert len(hellos) == 5 and len(answered) == 45
        for after, load in hellos.values():
            assert load["error"]["reason"] == "busy", load
            assert 0.5 <= after < 1.5, after        # when it expired, not when the backlog was gone
        last_sealed = max(after for rid, (after, _) in answered.items() if rid.startswith(b"sealed"))
        assert max(after for after, _ in hellos.values()) < last_sealed
        assert server.seen == ["aes"] * 40          # no hello reached the worker
        assert server.proxy.stats.expired == 5
    finally:
        raw.close(linger=0)
