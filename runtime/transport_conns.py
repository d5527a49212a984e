"""What each TCP connection of the request port holds in the master, and the bounds on it.

libzmq hides connections behind the ROUTER socket: it accepts any number, buffers every frame of a
multipart message until the message is whole (``ZMQ_MAXMSGSIZE`` bounds a frame, not how many),
and queues replies for a peer that does not read them.  The request proxy learns each connection
from a socket monitor (``ACCEPTED`` carries the file descriptor, ``DISCONNECTED``/``CLOSED`` end
it) and the connection each message came from (``ZMQ_SRCFD``), and reads the kernel's counters
for it (Linux ``TCP_INFO``: bytes received, bytes the peer acknowledged).  Two differences are
what libzmq holds for a connection:

* **unfinished**: bytes received − the wire size of the whole messages the proxy read from it:
  frames of a message not yet complete (and whole messages not yet read);
* **unread**: the wire size of the replies the proxy wrote to it − the bytes the peer
  acknowledged: replies queued in libzmq and the kernel for a peer that does not read them.

The proxy enforces (:class:`ConnectionLimits`): at most ``max_connections`` connections (beyond
it, the longest idle connection of the address holding the most is closed); a connection that
sends no request within ``first_request_s`` of connecting, or none for ``idle_s``, is closed;
a connection holding more than one message's worth of unfinished bytes, and the largest holders
while all connections together hold more than ``max_unfinished``, are closed; a flow (a
minion, a user, an address) whose connections hold more than ``max_unread`` of unread replies
gets no more requests served until it reads them (they wait in its bounded queue).  A connection is closed with ``shutdown(2)`` on
libzmq's descriptor (after checking it is still the same peer): libzmq sees the end of the stream
and releases it as if the peer had gone; nothing else of libzmq's is touched.

Without ``TCP_INFO`` (not Linux) or ``ZMQ_SRCFD``, the counters read as zero and only the
connection count and idle rules apply.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import zmq

from runtime.transport import readable
from runtime.transport_fair import FlowKey

log = logging.getLogger("saltpan.transport")

GREETING_SLACK = 1024        # ZMTP greeting, handshake and metadata, heartbeat commands: never a message


def frame_wire_size(length: int) -> int:
    """Bytes a ZMTP 3 frame of ``length`` bytes takes on the wire (flags, size, body)."""
    return length + (2 if length < 256 else 9)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 10_000           # connections the request port holds at once
    first_request_s: float = 10.0           # a connection must send its first request within this
    idle_s: float = 300.0                   # ... and then one at least this often (minions heartbeat)
    max_unfinished: int = 64 * 1024 * 1024  # bytes of unfinished messages, all connections together
    max_message: int = 16 * 1024 * 1024     # one message (max_message_size): what one connection may hold
    max_unread: int = 8 * 1024 * 1024       # bytes of replies a flow's connections may leave unread
    sweep_s: float = 0.1                    # how often the sweep runs (ConnectionTable.sweep)


@dataclass(eq=False)
class Connection:
    fd: int
    serial: int                       # tells a connection from a later one on the same descriptor
    source: str
    port: int
    opened: float
    last_request: float | None = None
    read: int = 0                     # wire bytes of the whole messages the proxy read from it
    written: int = 0                  # wire bytes of the replies the proxy wrote to it
    acked: int = 0                    # bytes the peer acknowledged, at the last reading
    received: int = 0                 # bytes received, at the last reading
    acked_base: int = -1              # acknowledged before the first reply (the greeting): from the first reading
    flow: FlowKey | None = None      # the flow of its last request
    read_at: float = float("-inf")    # when the counters were read last
    closing: bool = False

    @property
    def unread(self) -> int:
        base = max(self.acked_base, 0)
        return max(0, self.written - (self.acked - base))

    @property
    def unfinished(self) -> int:
        return max(0, self.received - self.read - GREETING_SLACK)


@dataclass
class ConnectionStats:
    accepted: int = 0
    closed_idle: int = 0
    closed_silent: int = 0
    closed_crowded: int = 0
    closed_unfinished: int = 0


@dataclass
class ConnectionTable:
    """The connections of one ROUTER socket (see the module docstring); driven by the proxy loop."""

    sock: zmq.Socket
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    note: Callable[..., None] = lambda *args: None      # (key, message, *args): a rate-limited warning
    info: Callable[..., None] = lambda *args: None      # the same for what is routine (silent, idle connections)
    clock: Callable[[], float] = time.monotonic
    by_fd: dict[int, Connection] = field(default_factory=dict)
    stats: ConnectionStats = field(default_factory=ConnectionStats)

    # Each sweep reads the counters of the next slice of connections, going round, so that every
    # connection is read about once per READ_EVERY_S (those holding unfinished bytes: at every
    # sweep), and never more than SWEEP_SLICE at once (beyond SWEEP_SLICE / sweep_s * READ_EVERY_S
    # connections, a round takes longer).  Reading all at every sweep cost a master with a few
    # hundred connections half of its request proxy's CPU.
    SWEEP_SLICE = 500
    READ_EVERY_S = 1.0
    REREAD_S = 0.05          # a held flow's counters are read again at most this often

    def __post_init__(self) -> None:
        from runtime.tcp_descriptors import Descriptors  # ctypes and socket: the server side only

        self.os = Descriptors()
        self.monitor = self.sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
        self._serial = 0
        self._next_sweep = 0.0
        self._turn = 0
        self._flows: dict[FlowKey, set[Connection]] = {}
        # per address, its connections from the least to the most recently active
        self._by_source: dict[str, dict[Connection, None]] = {}
        self._crowded = ""                   # an address holding (about) the most connections
        self._holding: set[Connection] = set()   # connections with unfinished bytes at their last reading
        self._over: dict[FlowKey, tuple[int, float]] = {}   # flows over max_unread: (bytes, when summed)

    def close(self) -> None:
        try:
            self.sock.disable_monitor()
        except zmq.ZMQError:
            pass
        self.monitor.close(linger=0)

    # ------------------------------------------------------------ events
    def poll_events(self) -> None:
        """Take the monitor's events (new and ended connections); cheap when there are none."""
        from zmq.utils.monitor import recv_monitor_message

        for _ in range(1000):
            try:
                event = recv_monitor_message(self.monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            fd = int(event["value"])
            if event["event"] == zmq.EVENT_ACCEPTED:
                self._accepted(fd)
            else:
                self._gone(fd)

    def _accepted(self, fd: int) -> Connection:
        peer = self.os.peer(fd) or ("unknown", 0)
        known = self.by_fd.get(fd)
        if known is not None:
            if (known.source, known.port) == peer:
                return known     # made when its first message came before the monitor's event
            self._gone(fd)       # a descriptor number reused before its end was seen
        self._serial += 1
        conn = Connection(fd, self._serial, peer[0], peer[1], self.clock())
        self.by_fd[fd] = conn
        members = self._by_source.setdefault(conn.source, {})
        members[conn] = None
        if len(members) > len(self._by_source.get(self._crowded, ())):
            self._crowded = conn.source
        self.stats.accepted += 1
        if len(self.by_fd) > self.limits.max_connections:
            self._close_crowded()
        return conn

    def _gone(self, fd: int) -> None:
        conn = self.by_fd.pop(fd, None)
        if conn is None:
            return
        self._set_flow(conn, None)
        self._holding.discard(conn)
        members = self._by_source.get(conn.source)
        if members is not None:
            members.pop(conn, None)
            if not members:
                del self._by_source[conn.source]

    def _close_crowded(self) -> None:
        """Over ``max_connections``: close the least recently active connection of the address
        holding the most (tracked as connections come; recomputed when that address left)."""
        members = self._by_source.get(self._crowded)
        if not members:
            self._crowded = max(self._by_source, key=lambda source: len(self._by_source[source]), default="")
            members = self._by_source.get(self._crowded)
        victim = next((c for c in members or () if not c.closing), None)
        if victim is None:
            return
        self.stats.closed_crowded += 1
        self.note("conn:crowded", "closed a connection from %s: %d connections held (max_connections %d), %d of "
                  "them from that address", victim.source, len(self.by_fd), self.limits.max_connections,
                  len(members or ()))
        self._close(victim)

    def _close(self, conn: Connection) -> None:
        if conn.closing:
            return
        peer = self.os.peer(conn.fd)
        if peer is not None and peer != (conn.source, conn.port):
            self._gone(conn.fd)          # the descriptor now belongs to another connection: ours is gone
            return
        conn.closing = True
        self.os.shutdown(conn.fd)        # libzmq reads the end of the stream and releases the connection

    # ------------------------------------------------------------ traffic
    def request(self, fd: int | None, wire_bytes: int) -> Connection | None:
        """A whole message of ``wire_bytes`` read from descriptor ``fd``."""
        if fd is None or fd < 0:
            return None
        conn = self.by_fd.get(fd)
        if conn is None or readable(self.monitor):
            # events first: a descriptor closed and reused by a new peer since the last sweep must
            # not charge that peer's message to the old connection's counters
            self.poll_events()
            conn = self.by_fd.get(fd) or self._accepted(fd)
        conn.read += wire_bytes
        conn.last_request = self.clock()
        members = self._by_source.get(conn.source)
        if members is not None and conn in members:     # most recently active last
            del members[conn]
            members[conn] = None
        return conn

    def reply(self, conn: Connection | None, serial: int, wire_bytes: int) -> None:
        """A reply of ``wire_bytes`` written to ``conn`` (the one ``serial`` names, if still there)."""
        if conn is not None and conn.serial == serial and self.by_fd.get(conn.fd) is conn:
            if conn.acked_base < 0:
                self._read(conn)         # what the peer acknowledged before any reply: the handshake
            conn.written += wire_bytes

    def alive(self, conn: Connection, serial: int) -> bool:
        """Whether ``conn`` (the one ``serial`` names) is still open: a reply could reach it."""
        return conn.serial == serial and not conn.closing and self.by_fd.get(conn.fd) is conn

    def bind_flow(self, conn: Connection | None, flow: FlowKey) -> None:
        if conn is not None and conn.flow != flow and self.by_fd.get(conn.fd) is conn:
            self._set_flow(conn, flow)

    def _set_flow(self, conn: Connection, flow: FlowKey | None) -> None:
        if conn.flow is not None:
            members = self._flows.get(conn.flow)
            if members is not None:
                members.discard(conn)
                if not members:
                    del self._flows[conn.flow]
                    self._over.pop(conn.flow, None)
        conn.flow = flow
        if flow is not None:
            self._flows.setdefault(flow, set()).add(conn)

    def unread_of(self, flow: FlowKey) -> int:
        """Bytes of replies the connections of ``flow`` have not read.  The estimate can only
        overstate (acknowledgements since the last reading are not in it); when it is over the
        limit the kernel's counters are read again, at most every ``REREAD_S`` per connection:
        a flood of requests from a flow that does not read must cost the proxy no system call
        each (a proxy slowed that way let libzmq queue the flood's requests, tens of MiB)."""
        conns = self._flows.get(flow)
        if not conns:
            return 0
        now = self.clock()
        over = self._over.get(flow)
        if over is not None and now - over[1] < self.REREAD_S:
            # over the limit at most REREAD_S ago: replies written since only add to it, and the
            # acknowledgements that could bring it under are not read again before then anyway (a
            # flow of 16 connections that does not read cost the proxy half its CPU in these sums)
            return over[0]
        total = sum(c.unread for c in conns)
        if total > self.limits.max_unread:
            stale = [c for c in conns if now - c.read_at >= self.REREAD_S]
            if stale:
                for conn in stale:
                    self._read(conn)
                total = sum(c.unread for c in conns)
        if total > self.limits.max_unread:
            self._over[flow] = (total, now)
        else:
            self._over.pop(flow, None)
        return total

    def over_unread(self, flow: FlowKey) -> bool:
        """True when ``flow`` left more than ``max_unread`` of replies unread."""
        return self.unread_of(flow) > self.limits.max_unread

    def _read(self, conn: Connection) -> None:
        conn.read_at = self.clock()
        counters = self.os.counters(conn.fd)
        if counters is None:
            return
        conn.acked, conn.received = counters
        if conn.acked_base < 0:
            conn.acked_base = conn.acked
        if conn.unfinished:
            self._holding.add(conn)
        else:
            self._holding.discard(conn)

    # ------------------------------------------------------------ the periodic sweep
    def sweep(self) -> None:
        """Every ``sweep_s``: take the monitor's events; read the counters of the next slice of
        connections (all of them in turns, :attr:`READ_EVERY_S`) and of those holding unfinished
        bytes; close the silent, the idle, and those holding
        unfinished messages beyond the bounds."""
        now = self.clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.limits.sweep_s
        self.poll_events()
        limits = self.limits
        for conn in [*self._next_slice(), *self._holding]:
            if conn.closing or self.by_fd.get(conn.fd) is not conn:
                self._holding.discard(conn)
                continue
            if conn.last_request is None and now - conn.opened > limits.first_request_s:
                self.stats.closed_silent += 1
                self.info("conn:silent", "closed a connection from %s that sent no request in %.0f s", conn.source,
                          limits.first_request_s)
                self._close(conn)
                continue
            if conn.last_request is not None and now - conn.last_request > limits.idle_s:
                self.stats.closed_idle += 1
                self.info("conn:idle", "closed a connection from %s idle for %.0f s", conn.source, limits.idle_s)
                self._close(conn)
                continue
            self._read(conn)
            if conn.unfinished > limits.max_message + GREETING_SLACK:
                self._close_unfinished(conn, "more than one message")
        total = sum(c.unfinished for c in self._holding if not c.closing)
        if total > limits.max_unfinished:
            for conn in sorted(self._holding, key=lambda c: c.unfinished, reverse=True):
                if total <= limits.max_unfinished:
                    break
                if conn.closing:
                    continue
                total -= conn.unfinished
                self._close_unfinished(conn, f"{total + conn.unfinished} bytes on all connections")

    def _next_slice(self) -> list[Connection]:
        """The next slice of connections, going round: every connection is read within
        ``len / slice`` sweeps.  (Taking ``conns[start:start + slice]`` without wrapping read only
        those from ``start`` on, and ``start`` could stay put for good: with 5 connections,
        500 % 5 == 0, two of them were never read again.)"""
        conns = list(self.by_fd.values())
        if not conns:
            return []
        start = self._turn % len(conns)
        share = -(-len(conns) * self.limits.sweep_s // self.READ_EVERY_S)   # ceil: a round per READ_EVERY_S
        count = min(self.SWEEP_SLICE, len(conns), max(1, int(share)))
        self._turn = start + count
        return [conns[(start + offset) % len(conns)] for offset in range(count)]

    def _close_unfinished(self, conn: Connection, why: str) -> None:
        self.stats.closed_unfinished += 1
        self._holding.discard(conn)
        self.note("conn:unfinished", "closed a connection from %s holding %d bytes of unfinished messages (%s; "
                  "max_message_size %d, max_unfinished_bytes %d)", conn.source, conn.unfinished, why,
                  self.limits.max_message, self.limits.max_unfinished)
        self._close(conn)

    def sources(self) -> dict[str, int]:
        return {source: len(members) for source, members in self._by_source.items()}

    def connections(self) -> Iterable[Connection]:
        return self.by_fd.values()
