"""Admission of hellos by the request proxy, with real sockets on 127.0.0.1: while the minions'
queued requests are more work than ``admission_backlog_s``, hellos wait, and one that waited its
lane's ``max_wait_s`` is answered ``busy`` while its minion still listens (not dropped)."""

from __future__ import annotations

import time

import pytest
import zmq
import zmq.asyncio

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


def test_hellos_refused_busy_name_the_window_to_come_back_within(ctx, master) -> None:
    """Thirty minions, each from its own loopback address, say hello at once to a master whose
    hello lane holds five: those refused are told to come back within the minions turned away
    over the hellos it admits a second (2 here), growing as more are turned away."""
    from runtime.transport import tcp_address_from
    from runtime.transport_hellos import HelloBacklog

    server = master(FairLimits(max_waiting={**FairLimits().max_waiting, Lane.AUTH: 5}))
    server.proxy.hellos = HelloBacklog(rate_floor=2.0)
    hello = codec.pack_envelope("clear", {"cmd": "_auth"})
    minions = []
    try:
        for i in range(30):
            sock = make_socket(ctx, zmq.DEALER)
            sock.connect(tcp_address_from(f"127.64.9.{i + 1}", 0, "127.0.0.1", server.port))
            minions.append(sock)
        for sock in minions:
            sock.send_multipart([b"", b"hello000", hello])
        windows = []
        for sock in minions:
            if sock.poll(5000):
                error = codec.unpack_envelope(sock.recv_multipart()[2]).load.get("error")
                if error is not None:
                    assert error["reason"] == "busy"
                    windows.append(error["retry_s"])
        assert len(windows) >= 10, windows
        # each one's window counts the minions refused before it: from 1 s (the least) up to all of them
        assert min(windows) == 1.0 and max(windows) == round(len(windows) / 2), windows
        assert server.proxy.hellos.waiting(time.monotonic()) == len(windows)
    finally:
        for sock in minions:
            sock.close(linger=0)


def test_a_minion_reads_the_window_from_a_busy_answer_to_its_hello(ctx, tmp_path) -> None:
    """The minion's side on real sockets: a ROUTER on 127.0.0.1 answers a hello ``busy`` with a
    ``retry_s``; ``authenticate`` raises MasterBusy carrying it (the session loop waits a random
    time within it, runtime/minion/daemon.py)."""
    import asyncio
    import threading

    from runtime import config
    from runtime.crypt.identity import Identity
    from runtime.crypt.trust import MasterTrust
    from runtime.minion.session import MasterBusy, authenticate
    from runtime.transport import bind, tcp_address

    router = make_socket(ctx, zmq.ROUTER)
    endpoint = bind(router, tcp_address("127.0.0.1", 0))
    load = codec.error_load("busy", "request refused: busy")
    load["error"]["retry_s"] = 7.0
    answer = codec.pack_envelope("clear", load)

    def serve() -> None:
        if router.poll(5000):
            ident, empty, rid, _ = router.recv_multipart()
            router.send_multipart([ident, empty, rid, answer])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    opts = config.load(None, "minion", {"pki_dir": str(tmp_path / "pki")})
    actx = zmq.asyncio.Context()
    try:
        with pytest.raises(MasterBusy) as refused:
            asyncio.run(authenticate(endpoint, Identity.generate(), "web01", MasterTrust(str(tmp_path / "pki"), None),
                                     opts, asyncio.Event(), actx))
        assert refused.value.retry_s == 7.0
    finally:
        thread.join(5)
        router.close(linger=0)
        actx.destroy(linger=0)


def test_a_minion_turned_away_busy_sends_its_next_hello_on_the_same_connection(ctx, tmp_path) -> None:
    """Real sockets on 127.0.0.1: with a ``HelloLink`` (as the session loop keeps one per master)
    two hellos refused ``busy`` arrive from one connection (one ROUTER peer); without one, each
    hello opens its own; a hello that goes unanswered closes the kept connection."""
    import asyncio
    import threading

    from runtime import config
    from runtime.crypt.identity import Identity
    from runtime.crypt.trust import MasterTrust
    from runtime.minion.session import HelloLink, MasterBusy, MasterUnreachable, authenticate
    from runtime.transport import bind, tcp_address

    router = make_socket(ctx, zmq.ROUTER)
    endpoint = bind(router, tcp_address("127.0.0.1", 0))
    answer = codec.pack_envelope("clear", codec.error_load("busy", "request refused: busy"))
    peers: list[bytes] = []

    def serve(count: int) -> None:
        for _ in range(count):
            if router.poll(5000):
                ident, empty, rid, _ = router.recv_multipart()
                peers.append(ident)
                router.send_multipart([ident, empty, rid, answer])

    opts = config.load(None, "minion", {"pki_dir": str(tmp_path / "pki"), "auth_timeout": 2.0})
    trust = MasterTrust(str(tmp_path / "pki"), None)
    identity = Identity.generate()
    actx = zmq.asyncio.Context()

    async def hellos(link: HelloLink | None, count: int) -> None:
        for _ in range(count):
            with pytest.raises(MasterBusy):
                await authenticate(endpoint, identity, "web01", trust, opts, asyncio.Event(), actx, link=link)

    try:
        for link in (None, HelloLink(endpoint, opts, actx)):
            peers.clear()
            thread = threading.Thread(target=serve, args=(2,), daemon=True)
            thread.start()
            asyncio.run(hellos(link, 2))
            thread.join(5)
            assert len(peers) == 2
            if link is not None:
                assert peers[0] == peers[1]           # one connection for both hellos
                assert link._client is not None       # still open for the next one

                async def unanswered(kept: HelloLink) -> None:
                    with pytest.raises(MasterUnreachable):
                        await authenticate(endpoint, identity, "web01", trust, opts, asyncio.Event(), actx,
                                           link=kept)

                asyncio.run(unanswered(link))          # nobody serves it: no reply in auth_timeout
                assert link._client is None           # a connection that went silent is not kept
            else:
                assert peers[0] != peers[1]           # a connection per hello
    finally:
        router.close(linger=0)
        actx.destroy(linger=0)
