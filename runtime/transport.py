"""ZeroMQ plumbing for the execution plane: bounded sockets, addresses, request/reply with
retries, the ReqServer proxy, worker framing, publish/subscribe, and per-peer rate limits.

Framing on the request port (ret_port, 4506)::

    client DEALER  -> [b"", rid, body]                    (rid: 8 random bytes per attempt)
    ROUTER (proxy) -> [identity, b"", rid, body]
    proxy ROUTER   -> worker DEALER [b"", identity, peer, rid, body] (peer: the client's IP, text;
                      identity, peer, rid, body once per request handed together)
    worker DEALER  -> proxy [b"", identity, rid, reply, meta, work]   (meta: the session served or
                      empty; work: encode_work)
    client DEALER  <- [b"", rid, reply]                   (a reply with another rid is dropped)

Publish port (publish_port, 4505): ``[topic, body]`` on PUB/SUB; ``BROADCAST`` or
:func:`minion_topic`.

Every socket gets ``ZMQ_MAXMSGSIZE`` (per frame), send/receive high-water marks, linger 0, a
send timeout, TCP keepalive and IPv6 off.  Every receive here takes a timeout.  Nothing binds
anywhere it was not told to.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import zmq

from runtime.private_files import ensure_private_dir
from runtime.workclock import WorkClock

RID_SIZE = 8
MAX_FRAMES = 8
BROADCAST = b"all"
IPC_PATH_MAX = 107  # sockaddr_un.sun_path on Linux, minus the NUL
READY = b"READY"             # what an idle worker tells the proxy (runtime.transport_proxy)
WORKER_IDLE_ANNOUNCE_S = 1.0
WORKER_BATCH_MAX = 16        # requests the proxy hands one worker at once, at most

T = TypeVar("T")


class TransportError(Exception):
    pass


class AddressError(TransportError, ValueError):
    pass


class RequestTimeout(TransportError):
    """No reply within the time allowed, after every retry."""


@dataclass(frozen=True)
class SocketLimits:
    max_message_size: int = 16 * 1024 * 1024   # ZMQ_MAXMSGSIZE: larger inbound frames drop the peer
    sndhwm: int = 1000
    rcvhwm: int = 1000
    send_timeout_ms: int = 2000                # a blocked send fails instead of hanging
    keepalive_idle_s: int = 60
    keepalive_interval_s: int = 10
    keepalive_count: int = 5
    reconnect_ivl_ms: int = 100
    reconnect_ivl_max_ms: int = 5000
    backlog: int = 100                         # ZMQ_BACKLOG (listen queue of a bound socket), libzmq's default


DEFAULT_LIMITS = SocketLimits()


def make_socket(ctx: zmq.Context, kind: int, limits: SocketLimits = DEFAULT_LIMITS, *,
                plain: bool = False) -> zmq.Socket:
    """A socket of ``kind`` (zmq.ROUTER, zmq.DEALER, ...) with every bound of ``limits`` applied.
    ``plain``: a ``zmq.Socket`` even from a ``zmq.asyncio`` context, for ``runtime.transport_loop``."""
    sock = zmq.Socket(ctx, kind) if plain else ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, limits.max_message_size)
    sock.setsockopt(zmq.SNDHWM, limits.sndhwm)
    sock.setsockopt(zmq.RCVHWM, limits.rcvhwm)
    sock.setsockopt(zmq.SNDTIMEO, limits.send_timeout_ms)
    sock.setsockopt(zmq.IPV6, 0)
    sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
    sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, limits.keepalive_idle_s)
    sock.setsockopt(zmq.TCP_KEEPALIVE_INTVL, limits.keepalive_interval_s)
    sock.setsockopt(zmq.TCP_KEEPALIVE_CNT, limits.keepalive_count)
    sock.setsockopt(zmq.RECONNECT_IVL, limits.reconnect_ivl_ms)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, limits.reconnect_ivl_max_ms)
    sock.setsockopt(zmq.BACKLOG, limits.backlog)
    return sock


# ------------------------------------------------------------------ addresses

def tcp_address(host: str, port: int) -> str:
    """``tcp://host:port`` for an IPv4 address or a host name (IPv6 is off)."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise AddressError(f"port must be 0..65535, got {port!r}")
    if not isinstance(host, str) or not host or any(c in host for c in "/[] \t\n") or ":" in host:
        raise AddressError(f"not an IPv4 address or host name: {host!r} (IPv6 is not supported)")
    return f"tcp://{host}:{port}"


def tcp_address_from(source: str, source_port: int, host: str, port: int) -> str:
    """ZeroMQ's ``tcp://source:sport;host:port``: connect to host:port from a local address
    (``source`` empty: :func:`tcp_address`, the kernel picks)."""
    target = tcp_address(host, port)
    if not source:
        return target
    parts = source.split(".")
    if len(parts) != 4 or not all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts):
        raise AddressError(f"source address must be an IPv4 address, got {source!r}")
    return f"{tcp_address(source, source_port)};{host}:{port}"


def ipc_path(sock_dir: str, name: str) -> str:
    """Path of ipc socket ``name`` in ``sock_dir`` (made 0700); refuses names with separators."""
    if not name or "/" in name or "\0" in name or name in (".", ".."):
        raise AddressError(f"invalid ipc socket name {name!r}")
    path = os.path.join(ensure_private_dir(sock_dir), name)
    if len(path.encode()) > IPC_PATH_MAX:
        raise AddressError(f"ipc socket path {path} is {len(path.encode())} bytes, over the {IPC_PATH_MAX} "
                           "the system allows: use a shorter sock_dir")
    return path


def ipc_address(sock_dir: str, name: str) -> str:
    return "ipc://" + ipc_path(sock_dir, name)


def bind(sock: zmq.Socket, address: str) -> str:
    """Bind to exactly ``address``; an ipc socket file is made 0600.  Returns the bound endpoint
    (with the real port when ``address`` asked for port 0)."""
    try:
        sock.bind(address)
    except zmq.ZMQError as exc:
        raise TransportError(f"cannot bind {address}: {exc}") from None
    endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://"):]
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode):
            os.chmod(path, 0o600)
    return endpoint


def bound_port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


# ------------------------------------------------------------------ framing helpers

# pyzmq's send_multipart and recv_multipart check each part's type and combine their flags as enum
# members (Python-level enum arithmetic per part): a request crossing the master takes ~35 parts.
# These do the same with plain ints; small parts are copied (pyzmq's zero-copy of a small buffer
# costs more than the copy: a message to its garbage-collector thread when libzmq releases it).
_SNDMORE = int(zmq.SNDMORE)
_RCVMORE = int(zmq.RCVMORE)
_POLLIN = int(zmq.POLLIN)
_EVENTS = int(zmq.EVENTS)
NOBLOCK = int(zmq.NOBLOCK)


def readable(sock: zmq.Socket) -> bool:
    """Whether a message waits on ``sock`` (``ZMQ_EVENTS`` as a plain int: ``Socket.poll(0)``
    builds a Poller per call, and pyzmq's enum members do their ``&`` in Python)."""
    return bool(int(sock.getsockopt(_EVENTS)) & _POLLIN)


def send_parts(sock: zmq.Socket, parts: list[Any], flags: int = 0) -> None:
    """``sock.send_multipart(parts, flags)``: bytes are copied, a ``zmq.Frame`` passed on as is.
    Raises ``zmq.Again`` (with ``NOBLOCK``) before any part is sent: a multipart message is queued
    whole or not at all."""
    send = sock.send
    more = _SNDMORE | flags
    last = len(parts) - 1
    for index, part in enumerate(parts):
        send(part, flags if index == last else more)


def recv_parts(sock: zmq.Socket, flags: int = 0, max_frames: int = MAX_FRAMES) -> list[bytes] | None:
    """One whole message as bytes, or None (after draining it) when it has more than
    ``max_frames`` frames; ``zmq.Again`` with ``NOBLOCK`` when there is none."""
    recv = sock.recv
    getsockopt = sock.getsockopt
    frames: list[bytes] = [recv(flags)]
    while getsockopt(_RCVMORE):
        if len(frames) >= max_frames:
            while getsockopt(_RCVMORE):
                recv(flags)
            return None
        frames.append(recv(flags))
    return frames


def recv_frames(sock: zmq.Socket, max_frames: int = MAX_FRAMES) -> list[zmq.Frame] | None:
    """Receive one whole message without blocking; None (after draining it) if it has more than
    ``max_frames`` frames.  Call only when the socket is readable."""
    frames = [sock.recv(zmq.NOBLOCK, copy=False)]
    while frames[-1].more:
        if len(frames) >= max_frames:
            while sock.getsockopt(zmq.RCVMORE):  # drain the rest without keeping it
                sock.recv(zmq.NOBLOCK, copy=False)
            return None
        frames.append(sock.recv(zmq.NOBLOCK, copy=False))
    return frames


# ------------------------------------------------------------------ request client

class RequestClient:
    """REQ-like client over DEALER: one request at a time, request ids, timeouts, retries.

    After a timeout the socket is closed and a new one connected (so a dead TCP connection or a
    lost reply cannot wedge the client), and the next attempt is made.  Replies whose request id
    is not the current attempt's are discarded.  Thread-safe (requests are serialized).
    """

    def __init__(self, address: str, *, ctx: zmq.Context | None = None, timeout: float = 5.0, tries: int = 3,
                 limits: SocketLimits = DEFAULT_LIMITS) -> None:
        if tries < 1 or timeout <= 0:
            raise ValueError("tries must be >= 1 and timeout > 0")
        self.address = address
        self.ctx = ctx or zmq.Context.instance()
        self.timeout = timeout
        self.tries = tries
        self.limits = limits
        self._sock: zmq.Socket | None = None
        self._lock = threading.Lock()
        self.reconnects = 0

    def _socket(self) -> zmq.Socket:
        if self._sock is None:
            self._sock = make_socket(self.ctx, zmq.DEALER, self.limits)
            self._sock.connect(self.address)
        return self._sock

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
            self.reconnects += 1

    def request(self, body: bytes, *, timeout: float | None = None, tries: int | None = None) -> bytes:
        """Send ``body`` (the same bytes on each try) and return the reply body."""
        return self.request_with(lambda: (None, body), timeout=timeout, tries=tries)[1]

    def request_with(self, make: Callable[[], tuple[T, bytes]], *, timeout: float | None = None,
                     tries: int | None = None) -> tuple[T, bytes]:
        """Call ``make()`` for each attempt (so a sealed request gets a new counter, a hello a new
        nonce) and return ``(context of the attempt that was answered, reply body)``."""
        timeout = self.timeout if timeout is None else timeout
        tries = self.tries if tries is None else tries
        with self._lock:
            for _attempt in range(tries):
                context, body = make()
                rid = os.urandom(RID_SIZE)
                sock = self._socket()
                try:
                    sock.send_multipart([b"", rid, body], copy=False)
                except zmq.Again:
                    self._reset()
                    continue
                reply = self._await(sock, rid, time.monotonic() + timeout)
                if reply is not None:
                    return context, reply
                self._reset()
            raise RequestTimeout(f"no reply from {self.address} after {tries} tries of {timeout:g} s")

    def _await(self, sock: zmq.Socket, rid: bytes, deadline: float) -> bytes | None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sock.poll(max(1, int(remaining * 1000)), zmq.POLLIN):
                return None
            frames = recv_frames(sock)
            if frames is None or len(frames) != 3 or frames[0].bytes != b"" or frames[1].bytes != rid:
                continue  # stale reply to an earlier attempt, or junk
            return frames[2].bytes

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close(linger=0)
                self._sock = None

    def __enter__(self) -> RequestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------ workers (the proxy: runtime.transport_proxy)

@dataclass(frozen=True)
class WorkerRequest:
    peer: str
    rid: bytes
    body: bytes
    client: bytes = b""     # the requester's route through the proxy (empty: malformed)


class WorkerSocket:
    """A worker's end of the proxy: a DEALER that takes what the proxy hands it — one request, or
    several at once when more wait than there are idle workers (:data:`WORKER_BATCH_MAX`) — and
    announces itself ``READY`` when it starts and, while idle, now and then (so a restarted proxy
    learns about it).  Each request gets its own reply, in the order they came."""

    def __init__(self, ctx: zmq.Context, address: str, limits: SocketLimits = DEFAULT_LIMITS,
                 clock: WorkClock | None = None) -> None:
        self.sock = make_socket(ctx, zmq.DEALER, limits)
        self.sock.connect(address)
        self._poller = zmq.Poller()
        self._poller.register(self.sock, zmq.POLLIN)
        self._handed: deque[WorkerRequest] = deque()    # handed together, not yet taken by recv()
        self._clock = clock or WorkClock()
        self._batch_start = self._clock.stamp()
        self._batch_size = 1
        self._work_each: bytes | None = None      # each reply's share of the batch's work, once known
        self._announce()

    def _announce(self) -> None:
        send_parts(self.sock, [b"", READY])
        self._idle_since = time.monotonic()

    def recv(self, timeout_ms: int) -> WorkerRequest | None:
        """The next request, or None on timeout.  A malformed one comes back with ``rid == b""``;
        answer every request with :meth:`reply`."""
        if not self._handed:
            self._handed.extend(self.recv_many(timeout_ms))
        return self._handed.popleft() if self._handed else None

    def recv_many(self, timeout_ms: int) -> list[WorkerRequest]:
        """The requests handed over together (one, or several), or [] on timeout; as :meth:`recv`."""
        if self._handed:
            handed = list(self._handed)
            self._handed.clear()
            return handed
        if not self._poller.poll(timeout_ms):          # one Poller for the socket's life, not one per call
            if time.monotonic() - self._idle_since >= WORKER_IDLE_ANNOUNCE_S:
                self._announce()
            return []
        frames = recv_parts(self.sock, NOBLOCK, 1 + 4 * WORKER_BATCH_MAX)
        if frames is None or len(frames) < 5 or (len(frames) - 1) % 4 or frames[0] != b"":
            return [WorkerRequest("unknown", b"", b"")]
        handed = [WorkerRequest(frames[i + 1].decode("ascii", "replace"), frames[i + 2], frames[i + 3], frames[i])
                  for i in range(1, len(frames), 4)]
        self._batch_start, self._batch_size, self._work_each = self._clock.stamp(), len(handed), None
        return handed

    def reply(self, request: WorkerRequest, body: bytes, meta: bytes = b"") -> None:
        """Answer ``request`` (a malformed one, which cannot be routed, only frees the worker).
        ``meta`` (:func:`runtime.transport_flows.encode_meta`) tells the proxy the session served;
        each reply also tells it its request's share of the work on the requests handed together,
        from their arrival to the first reply (:func:`encode_work`)."""
        if request.client and request.rid:
            if self._work_each is None:
                self._work_each = encode_work(self._clock.work_since(self._batch_start) / self._batch_size)
            send_parts(self.sock, [b"", request.client, request.rid, body, meta, self._work_each])
            self._idle_since = time.monotonic()
        else:
            self._announce()

    def close(self) -> None:
        self.sock.close(linger=0)
        self._clock.close()


def encode_work(seconds: float) -> bytes:
    """A worker's time on one request, less its waits for a CPU (``runtime.workclock``): whole
    microseconds, 4 bytes big-endian (at most about 71 minutes)."""
    return min(max(0, round(seconds * 1e6)), 0xFFFFFFFF).to_bytes(4, "big")


def decode_work(frame: bytes) -> float | None:
    """:func:`encode_work`'s seconds, None for anything else."""
    return int.from_bytes(frame, "big") / 1e6 if len(frame) == 4 else None


def recv_request(worker: WorkerSocket, timeout_ms: int) -> WorkerRequest | None:
    return worker.recv(timeout_ms)


def send_reply(worker: WorkerSocket, request: WorkerRequest, body: bytes, meta: bytes = b"") -> None:
    worker.reply(request, body, meta)


# ------------------------------------------------------------------ publish / subscribe

def minion_topic(minion_id: str) -> bytes:
    """Topic for publications meant for one minion (fixed length, so never a prefix of another)."""
    return b"id:" + hashlib.sha256(minion_id.encode()).hexdigest()[:32].encode()


def make_subscriber(ctx: zmq.Context, address: str, minion_id: str | None = None,
                    limits: SocketLimits = DEFAULT_LIMITS, *, plain: bool = False) -> zmq.Socket:
    """SUB connected to ``address``, subscribed to ``BROADCAST`` and the minion's own topic
    (``plain``: as for :func:`make_socket`)."""
    sock = make_socket(ctx, zmq.SUB, limits, plain=plain)
    sock.setsockopt(zmq.SUBSCRIBE, BROADCAST)
    if minion_id is not None:
        sock.setsockopt(zmq.SUBSCRIBE, minion_topic(minion_id))
    sock.connect(address)
    return sock


def send_publication(sock: zmq.Socket, body: bytes, topic: bytes = BROADCAST) -> bool:
    """Publish without blocking; False when the socket dropped it (high-water mark)."""
    try:
        sock.send_multipart([topic, body], zmq.NOBLOCK, copy=False)
        return True
    except zmq.Again:
        return False


def recv_publication(sock: zmq.Socket, timeout_ms: int) -> tuple[bytes, bytes] | None:
    """``(topic, body)`` of the next well-formed publication, or None on timeout.  Messages that
    are not exactly two frames are dropped."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        remaining = int((deadline - time.monotonic()) * 1000)
        if remaining <= 0 or not sock.poll(remaining, zmq.POLLIN):
            return None
        frames = recv_frames(sock)
        if frames is not None and len(frames) == 2:
            return frames[0].bytes, frames[1].bytes


def describe(sock: zmq.Socket) -> dict[str, Any]:
    """The limits a socket really has (for logs and tests)."""
    return {name: sock.getsockopt(getattr(zmq, name)) for name in
            ("MAXMSGSIZE", "SNDHWM", "RCVHWM", "LINGER", "SNDTIMEO", "IPV6", "TCP_KEEPALIVE")}
