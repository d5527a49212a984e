"""The ReqServer proxy with real workers: framing, peer address, malformed frames, rate limits,
priority of sealed requests over hellos, and one sealed request delivered to two worker
processes at once being processed once."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest
import zmq

from runtime import codec
from runtime.crypt.channel import ServerChannel
from runtime.crypt.errors import CryptoError
from runtime.master.store.sqlite_sessions import SQLiteSessionStore
from runtime.transport import (
    RequestClient,
    WorkerSocket,
    bind,
    ipc_address,
    make_socket,
    recv_request,
    send_reply,
    tcp_address,
)
from runtime.transport_proxy import ClearRateLimit, RequestProxy, TokenBucketLimiter


class ReqServer:
    """Frontend ROUTER on 127.0.0.1:free port, backend ROUTER on workers.ipc, proxy thread."""

    def __init__(self, ctx, sock_dir, admit=None):
        self.frontend = make_socket(ctx, zmq.ROUTER)
        self.endpoint = bind(self.frontend, tcp_address("127.0.0.1", 0))
        self.backend = make_socket(ctx, zmq.ROUTER)
        self.workers = ipc_address(sock_dir, "workers.ipc")
        bind(self.backend, self.workers)
        self.proxy = RequestProxy(self.frontend, self.backend, admit=admit)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.proxy.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.frontend.close(linger=0)
        self.backend.close(linger=0)


def echo_worker(ctx, address, stop, delay=0.0):
    sock = WorkerSocket(ctx, address)
    while not stop.is_set():
        request = recv_request(sock, 50)
        if request is None:
            continue
        time.sleep(delay)
        send_reply(sock, request, codec.pack_envelope("clear", {"peer": request.peer, "body": request.body}))
    sock.close()


@pytest.fixture
def reqserver(ctx, tmp_path):
    made = []

    def start(admit=None, workers=1, delay=0.0):
        server = ReqServer(ctx, str(tmp_path / "sock"), admit)
        stop = threading.Event()
        threads = [threading.Thread(target=echo_worker, args=(ctx, server.workers, stop, delay), daemon=True)
                   for _ in range(workers)]
        for thread in threads:
            thread.start()
        made.append((server, stop, threads))
        return server

    yield start
    for server, stop, threads in made:
        stop.set()
        for thread in threads:
            thread.join(5)
        server.close()


def test_round_trip_with_peer_address(ctx, reqserver):
    server = reqserver()
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        reply = codec.unpack_envelope(client.request(b"payload")).load
    assert reply == {"peer": "127.0.0.1", "body": b"payload"}
    assert server.proxy.stats.forwarded == 1 and server.proxy.stats.replies == 1


def test_malformed_frames_are_dropped_and_service_continues(ctx, reqserver):
    server = reqserver()
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    raw.send_multipart([b"no delimiter"])
    raw.send_multipart([b"", b"short-rid", b"body"])
    raw.send_multipart([b"", b"12345678"])                    # no body
    raw.send_multipart([b"", b"12345678", b"body", b"extra"])
    raw.send_multipart([b""] + [b"x"] * 200)                  # too many frames
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        assert codec.unpack_envelope(client.request(b"still here")).load["body"] == b"still here"
    assert server.proxy.stats.malformed == 5
    assert not raw.poll(100)
    raw.close()


def test_clear_requests_are_rate_limited_per_peer_aes_pass(ctx, reqserver):
    policy = ClearRateLimit(TokenBucketLimiter(rate=0.001, burst=3))
    server = reqserver(admit=policy)
    clear = codec.pack_envelope("clear", {"cmd": "_auth"})
    aes = codec.pack_envelope("aes", {"h": b"", "ct": b""})
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        answers = [codec.unpack_envelope(client.request(clear)).load for _ in range(5)]
        assert [a.get("body") == clear for a in answers] == [True, True, True, False, False]
        assert answers[3] == codec.error_load("rate_limited", "request refused: rate_limited")
        for _ in range(5):
            assert codec.unpack_envelope(client.request(aes)).load["body"] == aes
    assert server.proxy.stats.refused == 2


def test_requests_spread_over_several_workers(ctx, reqserver):
    server = reqserver(workers=3)
    with RequestClient(server.endpoint, ctx=ctx, timeout=2) as client:
        for i in range(12):
            assert codec.unpack_envelope(client.request(b"%d" % i)).load["body"] == b"%d" % i


def test_a_lone_request_goes_to_the_worker_idle_the_shortest(ctx, tmp_path):
    """Requests one after the other all go to the worker that answered the last one (it stays warm,
    the others sleep); requests that arrive together still go to as many idle workers."""
    server = ReqServer(ctx, str(tmp_path / "sock"))
    stop = threading.Event()
    served: list[tuple[int, bytes]] = []

    def worker(index: int) -> None:
        sock = WorkerSocket(ctx, server.workers)
        while not stop.is_set():
            request = recv_request(sock, 50)
            if request is not None:
                served.append((index, request.body))
                time.sleep(0.05)
                send_reply(sock, request, request.body)
        sock.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(3)]
    for thread in threads:
        thread.start()
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    try:
        deadline = time.monotonic() + 10
        while len(server.proxy.ready) < 3 and time.monotonic() < deadline:   # all three announced
            time.sleep(0.02)
        assert len(server.proxy.ready) == 3
        for i in range(6):
            raw.send_multipart([b"", b"one-%04d" % i, b"one"])
            assert raw.poll(5000)
            raw.recv_multipart()
        assert len({index for index, _ in served}) == 1, served
        served.clear()
        for i in range(3):
            raw.send_multipart([b"", b"all-%04d" % i, b"all"])
        for _ in range(3):
            assert raw.poll(5000)
            raw.recv_multipart()
        assert len({index for index, _ in served}) == 3, served
    finally:
        raw.close(linger=0)
        stop.set()
        for thread in threads:
            thread.join(5)
        server.close()


# ---------------------------------------------------------------- the replay race across processes

def _sealed_worker(address, db_path, stop):
    ctx = zmq.Context()
    sock = WorkerSocket(ctx, address)
    channel = ServerChannel(SQLiteSessionStore(db_path))
    pid = os.getpid()
    while not stop.is_set():
        request = recv_request(sock, 50)
        if request is None:
            continue
        if request.body == b"ping":
            send_reply(sock, request, b"%d" % pid)
            continue
        try:
            opened = channel.open_request(codec.unpack_envelope(request.body).load)
            reply = channel.seal_reply(opened, {"processed_by": pid, "payload": opened.payload})
        except CryptoError as exc:
            reply = codec.pack_envelope("clear", codec.error_load(exc.reason, str(pid)))
        send_reply(sock, request, reply)
    sock.close()
    ctx.destroy(linger=0)


def test_one_request_sent_to_two_worker_processes_at_once_is_processed_once(ctx, tmp_path, fleet_factory):
    fleet = fleet_factory(tmp_path)
    _, _, client_channel, _ = fleet.accepted("web1")
    server = ReqServer(ctx, str(tmp_path / "sock"))
    mp = multiprocessing.get_context("fork")
    stop = mp.Event()
    procs = [mp.Process(target=_sealed_worker, args=(server.workers, fleet.store.path, stop)) for _ in range(2)]
    for proc in procs:
        proc.start()
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    try:
        # wait until both workers are connected: two pings sent together (the proxy hands a lone
        # request to the worker idle the shortest) answered by two different processes
        pids, deadline, sent = set(), time.monotonic() + 10, 0
        while len(pids) < 2 and time.monotonic() < deadline:
            for _ in range(2):
                raw.send_multipart([b"", b"ping%04d" % sent, b"ping"])
                sent += 1
            answered = set()
            while len(answered) < 2 and raw.poll(200):
                answered.add(raw.recv_multipart()[2])
            pids = answered
        assert len(pids) == 2
        while raw.poll(200):
            raw.recv_multipart()
        counter, data = client_channel.seal_request({"cmd": "_return", "jid": "1"})
        raw.send_multipart([b"", b"rid-0001", data])   # the same bytes twice, back to back: the
        raw.send_multipart([b"", b"rid-0002", data])   # proxy hands them to the two idle workers
        replies = []
        while len(replies) < 2 and raw.poll(10_000):
            replies.append(raw.recv_multipart()[2])
        assert len(replies) == 2
        outcomes = []
        for reply in replies:
            env = codec.unpack_envelope(reply)
            if env.enc == "aes":
                outcomes.append(("ok", client_channel.open_reply(counter, reply)["processed_by"]))
            else:
                outcomes.append((env.load["error"]["reason"], int(env.load["error"]["message"])))
        assert sorted(kind for kind, _ in outcomes) == ["ok", "replayed"], outcomes
        assert outcomes[0][1] != outcomes[1][1], "the two copies were handled by two different processes"
    finally:
        raw.close(linger=0)
        stop.set()
        for proc in procs:
            proc.join(15)
            if proc.is_alive():
                proc.kill()
        server.close()
    assert all(proc.exitcode == 0 for proc in procs)


def test_sealed_requests_are_served_before_queued_hellos(ctx, reqserver):
    """One slow worker and a backlog of hellos: a sealed request sent last is answered next."""
    server = reqserver(workers=1, delay=0.05)
    hello = codec.pack_envelope("clear", {"cmd": "_auth", "pad": b"x" * 10})
    sealed = codec.pack_envelope("aes", {"h": b"h", "ct": b"c"})
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    try:
        for i in range(40):
            raw.send_multipart([b"", b"hello%03d" % i, hello])
        time.sleep(0.2)                                  # the hellos are queued behind the slow worker
        raw.send_multipart([b"", b"sealed00", sealed])
        order = []
        while len(order) < 41 and raw.poll(5000):
            order.append(raw.recv_multipart()[1])
        assert len(order) == 41
        assert order.index(b"sealed00") <= 6, order      # not behind the ~36 hellos still waiting
    finally:
        raw.close(linger=0)


def test_a_full_queue_answers_busy_at_once(ctx, reqserver):
    server = reqserver(workers=1, delay=0.2)
    server.proxy.limits.max_waiting["auth"] = 5
    hello = codec.pack_envelope("clear", {"cmd": "_auth"})
    raw = make_socket(ctx, zmq.DEALER)
    raw.connect(server.endpoint)
    try:
        for i in range(20):
            raw.send_multipart([b"", b"hello%03d" % i, hello])
        busy = 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and raw.poll(200):
            reply = codec.unpack_envelope(raw.recv_multipart()[2]).load
            busy += reply.get("error", {}).get("reason") == "busy"
        assert busy >= 10 and server.proxy.stats.dropped_busy == busy
    finally:
        raw.close(linger=0)
