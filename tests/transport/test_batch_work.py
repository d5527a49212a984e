"""How many minions' requests the request proxy hands one worker at once goes by the work the workers
report (runtime.workclock: their time less their waits for a CPU), not by the wall time: on cores
shared by more runnable processes than they have, batches keep their size; requests that wait for
I/O (a store's reply) still count whole, and are handed one at a time.  Real sockets on 127.0.0.1."""

from __future__ import annotations

import os
import time

import zmq

from runtime.transport import WorkerRequest, WorkerSocket
from runtime.transport_flows import encode_meta, session_id
from runtime.workclock import WorkClock
from tests.transport.proxy_harness import ProxyHarness
from tests.transport.test_flows import introduce, sealed

PILLAR_S = 0.06      # each "pillar" request's time at the worker: over BATCH_WORK_S once learnt


class QueuedClock(WorkClock):
    """A worker thread's clock whose CPU-wait counter the test's server moves."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = 0

    def _waited_ns(self) -> int:
        return self.waited


class SharedCoresMaster(ProxyHarness):
    """One worker taking what it is handed together and recording how many came at once.  A sealed
    request marked ``pillar`` takes PILLAR_S; with ``for_cpu`` that time was spent waiting for a CPU
    (runnable, behind other processes), else waiting for I/O."""

    def __init__(self, ctx: zmq.Context, sock_dir: str, sessions: dict[bytes, str], *, for_cpu: bool) -> None:
        self.sessions = sessions
        self.for_cpu = for_cpu
        self.handed: list[int] = []
        super().__init__(ctx, sock_dir, 1, proxy_args=(20,))

    def _worker(self, ctx: zmq.Context, address: str) -> None:
        clock = QueuedClock()
        sock = WorkerSocket(ctx, address, clock=clock)
        while not self.stop.is_set():
            requests = sock.recv_many(50)
            if requests:
                self.handed.append(len(requests))
            for request in requests:
                self.answer(sock, clock, request)
        sock.close()

    def answer(self, sock: WorkerSocket, clock: QueuedClock, request: WorkerRequest) -> None:
        sid = session_id(request.body)
        if sid is None:
            sock.reply(request, request.body)
            return
        if b"pillar" in request.body:
            time.sleep(PILLAR_S)
            if self.for_cpu:
                clock.waited += int(PILLAR_S * 1e9)
        sock.reply(request, b"ok", encode_meta(sid, self.sessions[sid]))


def handed_in_a_backlog(ctx: zmq.Context, sock_dir: str, *, for_cpu: bool) -> list[int]:
    """Ten minions that each asked twice for a pillar (their flows' cost learnt) ask again at once,
    while the one worker is busy: how many requests the worker was handed at a time."""
    sessions = {os.urandom(16): f"m{n:02d}" for n in range(10)}
    master = SharedCoresMaster(ctx, sock_dir, sessions, for_cpu=for_cpu)
    socks = []
    try:
        socks = [introduce(ctx, master.endpoint, sid) for sid in sessions]
        for counter in (1, 2):
            for sock, sid in zip(socks, sessions, strict=True):
                sock.send_multipart([b"", os.urandom(8), sealed(sid, counter, b"pillar")])
                assert sock.poll(5000)
                sock.recv_multipart()
        master.handed.clear()
        for sock, sid in zip(socks, sessions, strict=True):
            sock.send_multipart([b"", os.urandom(8), sealed(sid, 3, b"pillar")])
        for sock in socks:
            assert sock.poll(10_000), "a minion's request went unanswered"
            assert sock.recv_multipart()[2] == b"ok"
        return list(master.handed)
    finally:
        for sock in socks:
            sock.close(linger=0)
        master.close()


def test_time_waiting_for_a_cpu_does_not_shrink_the_batches(ctx, tmp_path) -> None:
    handed = handed_in_a_backlog(ctx, str(tmp_path / "cpu"), for_cpu=True)
    assert sum(handed) == 10 and max(handed) > 1, handed


def test_requests_that_wait_for_io_are_handed_one_at_a_time(ctx, tmp_path) -> None:
    handed = handed_in_a_backlog(ctx, str(tmp_path / "io"), for_cpu=False)
    assert handed == [1] * 10, handed
