"""The request proxy's flows end to end, with real sockets on 127.0.0.1 (issue 16, item 3): the
proxy (runtime.transport_proxy.RequestProxy) in front of worker threads that take one request at a time
and report the session they served, as the master's MWorkers do.

* one minion pipelining 40,000 sealed pillar requests (each costing a worker 5 ms) while three
  honest minions ask one request at a time: theirs are answered within a bound, the flood is
  mostly refused ``busy`` by the proxy and gets about its share of the workers;
* junk ``publish`` requests from four addresses, half of them claiming the operator's own user,
  while the operator's client publishes with a real client key: none of the operator's is
  refused ``busy`` and each is answered promptly (its lane is reserved);
* a flood's backlog is dropped when its connection closes, instead of keeping the workers busy;
* a heartbeat (its header marked) is served ahead of a queue of pillar compiles, its own minion's
  included, where an unmarked request waits behind them.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
import zmq

from runtime import codec
from runtime.crypt.clientkey import client_key_path, load_or_create_client_key, make_proof
from runtime.transport import WorkerRequest, WorkerSocket, make_socket
from runtime.transport_fair import FIRST_COST_S
from runtime.transport_flows import ClientProofs, current_user, encode_meta, session_id
from runtime.transport_proxy import BATCH_WORK_S
from tests.transport.proxy_harness import ProxyHarness, harness_factory

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

PILLAR_COST_S = 0.005
# the bound for honest round trips under a flood; the flood, the proxy and the workers share
# this process (and a loaded machine): without fair queueing, 4,000 queued requests of 5 ms ahead
# of each honest one took 10 s
MAX_P95_S = 2.0


def sealed(sid: bytes, counter: int, what: bytes, heartbeat: bool = False) -> bytes:
    """A sealed request laid out as saltpan packs it (the ciphertext is the test's marker);
    ``heartbeat``: its header marked as a heartbeat's (runtime.crypt.channel)."""
    fields: dict[str, object] = {"v": 1, "sid": sid, "ctr": counter, "ts": 1}
    header = codec.pack({**fields, "k": "hb"} if heartbeat else fields)
    return codec.pack({"enc": codec.ENC_AES, "load": {"h": header, "ct": what}})


def client_request(cmd: str, key: bytes | None, user: str) -> bytes:
    body = codec.pack({"fun": "test.ping", "tgt": "*", "arg": [], "kwarg": {}})
    proof = make_proof(key, user, body) if key is not None else \
        {"user": user, "ts": int(time.time() * 1000), "nonce": os.urandom(16), "mac": os.urandom(32)}
    return codec.pack_envelope(codec.ENC_CLEAR, {"cmd": cmd, "body": body, "proof": proof})


class Master(ProxyHarness):
    """A request proxy on a free port and ``workers`` worker threads.  A worker answers a sealed
    request after ``PILLAR_COST_S`` when its marker is ``pillar`` (at once otherwise), naming the
    session it served (``sessions``: session id -> minion id); anything else is echoed."""

    def __init__(self, ctx: zmq.Context, sock_dir: str, workers: int, sessions: dict[bytes, str],
                 proofs: ClientProofs | None = None) -> None:
        self.sessions = sessions
        self.served: dict[str, int] = {}
        super().__init__(ctx, sock_dir, workers, proxy_args=(20,), proofs=proofs)

    def serve(self, sock: WorkerSocket, request: WorkerRequest) -> None:
        sid = session_id(request.body)
        if sid is None:
            sock.reply(request, request.body)
            return
        minion = self.sessions[sid]
        self.served[minion] = self.served.get(minion, 0) + 1
        if codec.unpack(request.body)["load"]["ct"] == b"pillar":
            time.sleep(PILLAR_COST_S)
        sock.reply(request, b"ok", encode_meta(sid, minion))


@pytest.fixture
def master(ctx, tmp_path):
    yield from harness_factory(Master, ctx, tmp_path)


def ask(sock: zmq.Socket, body: bytes, timeout: float = 5.0) -> tuple[bytes | None, float]:
    """One request on ``sock`` (a DEALER), waiting for its own reply: (reply or None, seconds)."""
    rid = os.urandom(8)
    started = time.monotonic()
    sock.send_multipart([b"", rid, body])
    deadline = started + timeout
    while (left := deadline - time.monotonic()) > 0:
        if sock.poll(int(left * 1000) + 1):
            frames = sock.recv_multipart()
            if frames[1] == rid:
                return frames[2], time.monotonic() - started
    return None, timeout


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def reason(reply: bytes) -> str | None:
    try:
        load = codec.unpack_envelope(reply).load
    except codec.DecodeError:
        return None
    error = load.get("error") if isinstance(load, dict) else None
    return error.get("reason") if isinstance(error, dict) else None


def introduce(ctx: zmq.Context, endpoint: str, sid: bytes) -> zmq.Socket:
    """A minion's connection whose first request was answered (so the proxy knows its session)."""
    sock = make_socket(ctx, zmq.DEALER)
    sock.connect(endpoint)
    reply, _ = ask(sock, sealed(sid, 0, b"beat"))
    assert reply == b"ok"
    return sock


def test_one_minion_pipelining_40000_pillar_requests_does_not_starve_the_others(ctx, master) -> None:
    rogue_sid, honest_sids = b"R" * 16, [bytes([65 + i]) * 16 for i in range(3)]
    sessions = {rogue_sid: "rogue01", **{sid: f"web0{i}" for i, sid in enumerate(honest_sids)}}
    m = master(2, sessions)
    rogue = introduce(ctx, m.endpoint, rogue_sid)
    rogue.setsockopt(zmq.SNDHWM, 0)
    rogue.setsockopt(zmq.RCVHWM, 0)
    honest = [introduce(ctx, m.endpoint, sid) for sid in honest_sids]
    latencies: list[float] = []
    failures: list[int] = []
    flooding = threading.Event()
    flooding.set()

    def honest_loop(sock: zmq.Socket, sid: bytes) -> None:
        n = 0
        while flooding.is_set():
            n += 1
            reply, took = ask(sock, sealed(sid, n, b"pillar" if n % 3 == 0 else b"beat"))
            latencies.append(took)
            if reply != b"ok":
                failures.append(n)
            time.sleep(0.02)

    loops = [threading.Thread(target=honest_loop, args=(s, sid)) for s, sid in zip(honest, honest_sids, strict=True)]
    for loop in loops:
        loop.start()
    replies = {"ok": 0, "busy": 0}
    try:
        for n in range(40_000):
            rogue.send_multipart([b"", n.to_bytes(8, "big"), sealed(rogue_sid, n + 1, b"pillar")])
            while rogue.poll(0):
                reply = rogue.recv_multipart()[2]
                replies["ok" if reply == b"ok" else reason(reply) or "other"] += 1
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:   # the honest minions go on while the flood's backlog drains
            while rogue.poll(100):
                reply = rogue.recv_multipart()[2]
                replies["ok" if reply == b"ok" else reason(reply) or "other"] += 1
    finally:
        flooding.clear()
        for loop in loops:
            loop.join(10)
        for sock in [rogue, *honest]:
            sock.close(linger=0)
    summary = (f"{len(latencies)} honest requests, p95 {p95(latencies):.3f} s, max {max(latencies):.3f} s, "
               f"{len(failures)} failed; flood replies {replies}; served {m.served}; {m.proxy.stats}")
    assert not failures, summary
    assert len(latencies) > 30, summary
    assert p95(latencies) < MAX_P95_S, summary
    assert replies["busy"] > 30_000, summary           # refused by the proxy: no worker saw them
    assert m.proxy.stats.dropped_busy >= replies["busy"]
    # its share of two workers while three others ask: far from all of them
    assert m.served["rogue01"] < 40_000 // 4, summary


def test_junk_publishes_do_not_get_the_operators_refused(ctx, master, tmp_path) -> None:
    cachedir = str(tmp_path / "cache")
    operator = current_user()
    key = load_or_create_client_key(client_key_path(cachedir, operator))
    m = master(1, {}, ClientProofs(cachedir, operator))
    m.proxy.limits.max_waiting["client"] = 200       # a small lane, so that junk fills it quickly

    stop = threading.Event()
    junk_sent = [0]

    def junk(source: str) -> None:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://{source}:0;{m.endpoint[len('tcp://'):]}")
        n = 0
        while not stop.is_set():
            n += 1
            user = operator if n % 2 else f"nouser{n % 97}"
            try:
                sock.send_multipart([b"", os.urandom(8), client_request("publish", None, user)], zmq.NOBLOCK)
                junk_sent[0] += 1
            except zmq.Again:
                time.sleep(0.001)
            while sock.poll(0):
                sock.recv_multipart()
            if n % 50 == 0:
                time.sleep(0.005)
        sock.close(linger=0)

    attackers = [threading.Thread(target=junk, args=(f"127.0.0.{120 + i}",)) for i in range(4)]
    for thread in attackers:
        thread.start()
    operator_sock = make_socket(ctx, zmq.DEALER)
    operator_sock.connect(m.endpoint)
    answered: list[float] = []
    refused: list[str | None] = []
    try:
        time.sleep(0.5)
        for _ in range(36):
            reply, took = ask(operator_sock, client_request("publish", key, operator))
            if reply is None or reason(reply) is not None:
                refused.append(None if reply is None else reason(reply))
            else:
                answered.append(took)
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in attackers:
            thread.join(10)
        operator_sock.close(linger=0)
    summary = (f"{len(answered)} operator publishes answered (p95 {p95(answered or [0.0]):.3f} s), refused "
               f"{refused}; {junk_sent[0]} junk sent; {m.proxy.stats}")
    assert not refused, summary
    assert p95(answered) < MAX_P95_S, summary
    assert m.proxy.stats.dropped_busy > 0, summary     # the junk did fill its own lane
    assert junk_sent[0] > 2000, summary


def test_a_flood_backlog_is_dropped_when_its_connection_closes(ctx, master) -> None:
    rogue_sid, honest_sid = b"R" * 16, b"H" * 16
    m = master(1, {rogue_sid: "rogue01", honest_sid: "web01"})
    rogue = introduce(ctx, m.endpoint, rogue_sid)
    for n in range(150):                               # within its flow's bound: all queued
        rogue.send_multipart([b"", n.to_bytes(8, "big"), sealed(rogue_sid, n + 1, b"pillar")])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and m.proxy.stats.forwarded + sum(m.proxy.waiting().values()) < 151:
        time.sleep(0.01)
    queued = sum(m.proxy.waiting().values())
    assert queued > 100, m.proxy.stats
    rogue.close(linger=0)
    honest = introduce(ctx, m.endpoint, honest_sid)
    try:
        deadline = time.monotonic() + 5
        # the proxy thread drops the backlog one entry at a time: wait for all of it, not the first
        while time.monotonic() < deadline and m.proxy.stats.dropped_gone < queued - 5:
            time.sleep(0.05)
        assert m.proxy.stats.dropped_gone >= queued - 5, (queued, m.proxy.stats)
        assert m.served["rogue01"] < 50, m.served      # not all 150 (5 ms each) ran for nobody
        reply, took = ask(honest, sealed(honest_sid, 1, b"beat"))
        assert reply == b"ok" and took < 0.5
    finally:
        honest.close(linger=0)


def test_a_marked_heartbeat_is_served_ahead_of_the_queued_pillar_requests(ctx, master) -> None:
    """Twenty minions queue ten pillar requests each (a second of work for two workers). A marked
    heartbeat of one of them is served as soon as a worker finishes what it holds; the same minion's
    unmarked request sent at the same time waits behind its own ten pillar requests and its share of
    the others'."""
    sids = [bytes([65 + i]) * 16 for i in range(20)]
    sessions = {sid: f"m{i:02d}" for i, sid in enumerate(sids)}
    m = master(2, sessions)
    socks = [introduce(ctx, m.endpoint, sid) for sid in sids]
    try:
        for sock, sid in zip(socks, sids, strict=True):
            for n in range(10):
                sock.send_multipart([b"", os.urandom(8), sealed(sid, 100 + n, b"pillar")])
        time.sleep(0.05)                                 # queued in the proxy
        plain_sock = make_socket(ctx, zmq.DEALER)        # the same minion, another connection
        plain_sock.connect(m.endpoint)
        served_before = sum(m.served.values())
        results: dict[str, int] = {}

        def plain() -> None:
            reply, _ = ask(plain_sock, sealed(sids[0], 200, b"beat"), timeout=30)
            assert reply == b"ok"
            results["plain"] = sum(m.served.values()) - served_before

        waiting = threading.Thread(target=plain)
        waiting.start()
        reply, _ = ask(socks[0], sealed(sids[0], 201, b"beat", heartbeat=True), timeout=30)
        assert reply == b"ok"
        results["heartbeat"] = sum(m.served.values()) - served_before
        waiting.join(60)
        plain_sock.close(linger=0)
        print(results)
        # A worker may hold a batch of minions' requests (about BATCH_WORK_S of their flows' cost,
        # FIRST_COST_S each while unknown): the heartbeat waits for one to finish, at most what
        # both workers hold plus a dispatch of each lane's turn.
        held = 2 * -(-BATCH_WORK_S // FIRST_COST_S)
        assert results["heartbeat"] <= held + 2, results
        assert results["plain"] >= 100, results          # behind its own ten and the others' share
    finally:
        for sock in socks:
            sock.close(linger=0)


class BatchingMaster(Master):
    """:class:`Master` whose workers take what the proxy hands them together (as MWorkers do) and
    record how many requests came at once; a sealed request marked ``slow`` takes 0.2 s."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.handed: list[int] = []
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def serve(self, sock: WorkerSocket, request: WorkerRequest) -> None:
        if session_id(request.body) is not None and codec.unpack(request.body)["load"]["ct"] == b"slow":
            time.sleep(0.2)
        super().serve(sock, request)

    def _worker(self, ctx: zmq.Context, address: str) -> None:
        sock = WorkerSocket(ctx, address)
        while not self.stop.is_set():
            requests = sock.recv_many(50)
            if requests:
                self.handed.append(len(requests))
            for request in requests:
                self.serve(sock, request)
        sock.close()


def test_a_backlog_of_minions_requests_is_handed_to_a_worker_several_at_once(ctx, tmp_path) -> None:
    """Minions' requests waiting beyond the idle workers go to a worker together (up to
    WORKER_BATCH_MAX; an MWorker stores their returns with one commit), each answered on its own
    connection; other lanes' requests (hellos, here) are handed one at a time."""
    from runtime.transport import WORKER_BATCH_MAX

    sessions = {os.urandom(16): f"m{n:02d}" for n in range(40)}
    master = BatchingMaster(ctx, str(tmp_path / "h"), 1, sessions)
    socks = []
    try:
        socks = [introduce(ctx, master.endpoint, sid) for sid in sessions]
        master.handed.clear()
        first = socks[0]
        first.send_multipart([b"", os.urandom(8), sealed(next(iter(sessions)), 1, b"slow")])
        time.sleep(0.05)                  # the one worker is busy: the others wait in the proxy
        rids = []
        for sock, sid in zip(socks[1:], list(sessions)[1:], strict=True):
            rids.append(os.urandom(8))
            sock.send_multipart([b"", rids[-1], sealed(sid, 1, b"ret")])
        for sock, rid in zip(socks[1:], rids, strict=True):
            assert sock.poll(5000), "a minion's request went unanswered"
            frames = sock.recv_multipart()
            assert frames[1:] == [rid, b"ok"]
        assert first.poll(5000)
        assert master.handed[0] == 1 and max(master.handed) > 1, master.handed
        assert max(master.handed) <= WORKER_BATCH_MAX and sum(master.handed) == 40, master.handed

        master.handed.clear()
        hello = codec.pack_envelope("clear", {"cmd": "_auth", "pad": b"x"})
        first.send_multipart([b"", os.urandom(8), sealed(next(iter(sessions)), 2, b"slow")])
        time.sleep(0.05)
        for n in range(10):
            socks[1].send_multipart([b"", b"hello%03d" % n, hello])
        replies = []
        while len(replies) < 10 and socks[1].poll(5000):
            replies.append(socks[1].recv_multipart()[1])
        assert sorted(replies) == [b"hello%03d" % n for n in range(10)]
        assert first.poll(5000)
        assert master.handed == [1] * 11, master.handed
    finally:
        for sock in socks:
            sock.close(linger=0)
        master.close()
