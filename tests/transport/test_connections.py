"""What the request proxy bounds per connection (runtime/transport_conns.py), with real sockets on
127.0.0.1: silent and idle connections closed, the connection count bounded (the address holding
the most loses its least active), unfinished multipart messages bounded, and a client that does
not read its replies served nothing more until it does."""

from __future__ import annotations

import os
import socket
import time

import pytest
import zmq

from runtime import codec
from runtime.transport import RequestClient, WorkerRequest, WorkerSocket
from runtime.transport_conns import ConnectionLimits
from tests.security.clients import ZMTP_GREETING, ZMTP_READY
from tests.transport.proxy_harness import ProxyHarness, harness_factory

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="optional: Linux TCP_INFO")


class Server(ProxyHarness):
    def __init__(self, ctx: zmq.Context, sock_dir: str, limits: ConnectionLimits, reply_size: int = 0) -> None:
        self.reply_size = reply_size
        super().__init__(ctx, sock_dir, connections=limits)

    def serve(self, sock: WorkerSocket, request: WorkerRequest) -> None:
        sock.reply(request, b"r" * self.reply_size if self.reply_size else request.body)

    def count(self) -> int:
        return len(self.proxy.conns.by_fd)


@pytest.fixture
def server(ctx, tmp_path):
    yield from harness_factory(Server, ctx, tmp_path)


def wait_until(check, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_silent_connections_are_closed(server) -> None:
    srv = server(ConnectionLimits(first_request_s=0.5))
    held = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(20)]
    try:
        assert wait_until(lambda: srv.count() == 20, 2)
        assert wait_until(lambda: srv.count() == 0, 5), srv.count()
        assert srv.proxy.conns.stats.closed_silent == 20
    finally:
        for s in held:
            s.close()


def test_the_connection_count_is_bounded_and_the_crowded_address_loses(server, ctx) -> None:
    srv = server(ConnectionLimits(max_connections=30, first_request_s=60))
    honest = RequestClient(srv.endpoint, ctx=ctx, timeout=2)
    try:
        assert honest.request(b"first") == b"first"
        flood = [socket.create_connection(("127.0.0.1", srv.port), source_address=("127.0.0.77", 0))
                 for _ in range(60)]
        assert wait_until(lambda: srv.proxy.conns.stats.closed_crowded >= 30 and srv.count() <= 31, 10), srv.count()
        assert srv.proxy.conns.sources().get("127.0.0.1") == 1       # the honest connection stayed
        assert honest.request(b"still") == b"still" and honest.reconnects == 0
        for s in flood:
            s.close()
    finally:
        honest.close()


def test_unfinished_multipart_messages_are_bounded(server, ctx) -> None:
    """A peer that sends frame after frame of one message and never the last: libzmq would
    buffer them all; the connection is closed once it holds more than one message's worth."""
    srv = server(ConnectionLimits(max_message=1024 * 1024, first_request_s=60, sweep_s=0.05))
    raw = socket.create_connection(("127.0.0.1", srv.port))
    try:
        raw.sendall(ZMTP_GREETING + ZMTP_READY)
        chunk = b"\x03" + (256 * 1024).to_bytes(8, "big") + b"x" * (256 * 1024)   # a long frame, more to come
        sent = 0
        with pytest.raises(OSError):
            for _ in range(400):          # 100 MiB if nothing stopped it
                raw.sendall(chunk)
                sent += len(chunk)
                time.sleep(0.002)
        # what was sent beyond one message sat in the two kernels' socket buffers (autotuned up to
        # tcp_rmem/tcp_wmem's maximum), or arrived during one sweep of a loaded machine
        assert sent < 1024 * 1024 + _kernel_buffers() + 16 * 1024 * 1024, sent
        assert srv.proxy.conns.stats.closed_unfinished >= 1
    finally:
        raw.close()
    with RequestClient(srv.endpoint, ctx=ctx, timeout=2) as client:
        assert client.request(b"after") == b"after"


def _kernel_buffers() -> int:
    """The most a loopback connection's receive and send buffers can hold (Linux autotuning)."""
    total = 0
    for name in ("tcp_rmem", "tcp_wmem"):
        with open(f"/proc/sys/net/ipv4/{name}") as f:
            total += int(f.read().split()[2])
    return total


def test_all_connections_together_hold_at_most_max_unfinished(server) -> None:
    srv = server(ConnectionLimits(max_message=4 * 1024 * 1024, max_unfinished=2 * 1024 * 1024,
                                  first_request_s=60, sweep_s=0.05))
    raws = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(8)]
    for raw in raws:
        raw.sendall(ZMTP_GREETING + ZMTP_READY + b"\x03" + (1 << 20).to_bytes(8, "big") + b"y" * (600 * 1024))
    assert wait_until(lambda: srv.proxy.conns.stats.closed_unfinished >= 5, 10), \
        [(c.fd, c.received, c.read, c.closing) for c in srv.proxy.conns.connections()]
    # read from this thread while the proxy's may be between counting a close and marking it
    assert wait_until(lambda: sum(c.unfinished for c in list(srv.proxy.conns.connections()) if not c.closing)
                      <= 2 * 1024 * 1024, 2)
    for raw in raws:
        raw.close()


def test_a_client_that_does_not_read_is_served_nothing_more(server, ctx) -> None:
    srv = server(ConnectionLimits(max_unread=2 * 1024 * 1024, first_request_s=60), reply_size=256 * 1024)
    deaf = ctx.socket(zmq.DEALER)
    deaf.setsockopt(zmq.RCVHWM, 1)
    deaf.setsockopt(zmq.RCVBUF, 4096)
    deaf.connect(srv.endpoint)
    body = codec.pack_envelope("aes", {"h": b"h" * 40, "ct": b"c" * 100})
    try:
        for _ in range(200):
            deaf.send_multipart([b"", os.urandom(8), body])
        time.sleep(2)
        conns = [c for c in srv.proxy.conns.connections() if c.written]
        unread = sum(c.unread for c in conns)
        assert unread <= 2 * 1024 * 1024 + 2 * 256 * 1024, unread
        assert srv.proxy.stats.forwarded < 30, srv.proxy.stats
        reader = ctx.socket(zmq.DEALER)       # a client from another address (another flow) is served
        reader.connect(f"tcp://127.0.0.78:0;127.0.0.1:{srv.port}")
        reader.send_multipart([b"", b"12345678", body])
        assert reader.poll(3000), "a reading client was not served"
        assert len(reader.recv_multipart()[2]) == 256 * 1024
        reader.close(linger=0)
    finally:
        deaf.close(linger=0)


def test_a_flow_that_stopped_reading_is_served_again_once_its_connections_closed(server, ctx) -> None:
    """The deaf client's own minion (here: its address) comes back on a new connection after the
    deaf one closed: its unread replies went with that connection, and it is served at once."""
    srv = server(ConnectionLimits(max_unread=2 * 1024 * 1024, first_request_s=60), reply_size=256 * 1024)
    body = codec.pack_envelope("aes", {"h": b"h" * 40, "ct": b"c" * 100})
    deaf = ctx.socket(zmq.DEALER)
    deaf.setsockopt(zmq.RCVHWM, 1)
    deaf.setsockopt(zmq.RCVBUF, 4096)
    deaf.connect(srv.endpoint)
    for _ in range(200):
        deaf.send_multipart([b"", os.urandom(8), body])
    assert wait_until(lambda: sum(srv.proxy.waiting().values()) > 100, 5), srv.proxy.stats   # held
    assert srv.proxy.stats.forwarded < 30, srv.proxy.stats
    deaf.close(linger=0)
    assert wait_until(lambda: not [c for c in srv.proxy.conns.connections() if c.written], 5)
    with RequestClient(srv.endpoint, ctx=ctx, timeout=3, tries=1) as again:
        started = time.monotonic()
        assert len(again.request(body)) == 256 * 1024
        assert time.monotonic() - started < 2.0
    assert srv.proxy.stats.dropped_gone > 0, srv.proxy.stats


class CountingDescriptors:
    """The kernel's side of a ConnectionTable, for the sweep's order alone: which descriptors it read."""

    def __init__(self) -> None:
        self.read: list[int] = []

    def counters(self, fd: int) -> tuple[int, int]:
        self.read.append(fd)
        return 0, 0

    def peer(self, fd: int) -> tuple[str, int]:
        return "127.0.0.1", 40_000 + fd


@pytest.mark.parametrize("count", [1, 3, 333, 1000, 20_000])
def test_each_connection_is_read_about_once_a_second(ctx, count: int) -> None:
    """Sweeps every 0.1 s read a tenth of the connections each (at most SWEEP_SLICE): every one
    within READ_EVERY_S, without reading all of them ten times a second."""
    from runtime.transport_conns import ConnectionTable

    now = [0.0]
    table = ConnectionTable(ctx.socket(zmq.ROUTER), ConnectionLimits(sweep_s=0.1, first_request_s=1e9, max_connections=30_000),
                            clock=lambda: now[0])
    try:
        table.os = CountingDescriptors()  # type: ignore[assignment]
        for fd in range(10, 10 + count):
            table._accepted(fd)
        table.os.read.clear()
        sweeps = 0
        while set(table.os.read) != set(table.by_fd):
            now[0] += 0.1
            table.sweep()
            sweeps += 1
            assert sweeps <= 1000
        per_sweep = min(ConnectionTable.SWEEP_SLICE, -(-count // 10))
        assert len(table.os.read) == sweeps * per_sweep      # the last slice may start the next round
        assert sweeps == -(-count // per_sweep)
        assert sweeps * 0.1 <= max(ConnectionTable.READ_EVERY_S, count / ConnectionTable.SWEEP_SLICE * 0.1) + 1e-9
    finally:
        table.close()
        table.sock.close(linger=0)


@pytest.mark.parametrize(("count", "per_sweep"), [(5, 500), (8, 500), (8, 3), (7, 3), (1, 500)])
def test_every_connection_is_read_within_its_turn(ctx, count: int, per_sweep: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep reads the next slice of connections going round: with 5 connections and a slice of
    500 it used to read only those from one start position on, and two were never read again (a
    connection holding unfinished bytes stayed unseen, a silent one was never closed)."""
    from runtime.transport_conns import ConnectionTable

    monkeypatch.setattr(ConnectionTable, "SWEEP_SLICE", per_sweep)
    now = [0.0]
    table = ConnectionTable(ctx.socket(zmq.ROUTER), ConnectionLimits(sweep_s=1.0), clock=lambda: now[0])
    try:
        table.os = CountingDescriptors()  # type: ignore[assignment]
        fds = list(range(10, 10 + count + 3))
        for fd in fds:
            table._accepted(fd)
        for fd in fds[:3]:               # three gone: the turn's position now falls inside the rest
            table._gone(fd)
        fds = fds[3:]
        sweeps = -(-count // min(per_sweep, count))
        for _round in range(3):
            table.os.read.clear()
            for _ in range(sweeps):
                now[0] += 1.0
                table.sweep()
            assert set(table.os.read) == set(fds), (sorted(table.os.read), fds)
    finally:
        table.close()
        table.sock.close(linger=0)


class AckingDescriptors(CountingDescriptors):
    """Counters a test sets: bytes the peer acknowledged (the same for every descriptor)."""

    def __init__(self) -> None:
        super().__init__()
        self.acked = 0

    def counters(self, fd: int) -> tuple[int, int]:
        self.read.append(fd)
        return self.acked, 0


def test_a_held_flow_of_many_connections_is_summed_once_per_reread(ctx, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flow over max_unread is asked about at every request it sends and at every dispatch: its
    total is kept for REREAD_S instead of summed over its connections each time (a deaf flow of 16
    connections sending 2,000 requests a second cost the proxy half of its CPU in those sums), and
    the acknowledgements read after REREAD_S bring it under again."""
    from runtime.transport_conns import Connection, ConnectionTable

    now = [0.0]
    limits = ConnectionLimits(max_unread=8 * 1024 * 1024, first_request_s=1e9)
    table = ConnectionTable(ctx.socket(zmq.ROUTER), limits, clock=lambda: now[0])
    try:
        table.os = AckingDescriptors()  # type: ignore[assignment]
        flow = ("minion", "deaf")
        for fd in range(10, 26):
            conn = table._accepted(fd)
            table.bind_flow(conn, flow)
            table.reply(conn, conn.serial, 1024 * 1024)
        assert table.over_unread(flow)
        summed = [0]
        original = Connection.unread

        def counting(self: Connection) -> int:
            summed[0] += 1
            return original.fget(self)  # type: ignore[attr-defined, no-any-return]

        monkeypatch.setattr(Connection, "unread", property(counting))
        reads = len(table.os.read)
        for _ in range(1000):
            assert table.over_unread(flow)
        assert summed[0] == 0 and len(table.os.read) == reads
        table.os.acked = 16 * 1024 * 1024           # everything read by the peer
        now[0] += ConnectionTable.REREAD_S
        assert not table.over_unread(flow)
        assert table.unread_of(flow) == 0
        assert summed[0] <= 3 * 16 and len(table.os.read) == reads + 16
    finally:
        table.close()
        table.sock.close(linger=0)


def test_a_descriptor_reused_by_a_new_peer_starts_a_new_connection(ctx) -> None:
    """A peer closes, another connects and is given the same descriptor number, and its first
    message is read before any sweep: the table takes the monitor's pending events first, so the
    message is the new connection's, not charged to the old one's counters."""
    from runtime.transport_conns import ConnectionTable

    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    table = ConnectionTable(router, ConnectionLimits(first_request_s=1e9, sweep_s=3600))
    peers = []
    try:
        def first_message(body: bytes) -> tuple[int, object]:
            peer = ctx.socket(zmq.DEALER)
            peer.connect(f"tcp://127.0.0.1:{port}")
            peer.send(body)
            peers.append(peer)
            assert router.poll(5000, zmq.POLLIN)
            frames = router.recv_multipart(copy=False)
            fd = int(frames[-1].get(zmq.SRCFD))
            return fd, table.request(fd, len(body))

        fd_a, conn_a = first_message(b"a" * 1000)
        assert conn_a is not None and conn_a.read == 1000
        peers.pop().close(linger=0)
        assert wait_until(lambda: router.poll(0) == 0 and table.monitor.poll(0) != 0, 2)
        time.sleep(0.1)                      # the old connection's end is queued on the monitor, unread
        fd_b, conn_b = first_message(b"b" * 10)
        if fd_b != fd_a:
            pytest.skip(f"the kernel gave the new connection another descriptor ({fd_b}, not {fd_a})")
        assert conn_b is not None and conn_b is not conn_a and conn_b.serial != conn_a.serial
        assert conn_b.read == 10 and table.by_fd[fd_b] is conn_b
    finally:
        for peer in peers:
            peer.close(linger=0)
        table.close()
        router.close(linger=0)
