"""ZeroMQ plumbing for the execution plane: bounded sockets, addresses, request/reply with
retries, the ReqServer proxy, worker framing, publish/subscribe, and per-peer rate limits.

Framing on the request port (ret_port, 4506)::

    client DEALER  -> [b"", rid, body]                    (rid: 8 random bytes per attempt)
    ROUTER (proxy) -> [identity, b"", rid, body]
    proxy DEALER   -> [identity, b"", peer, rid, body]    (peer: the client's IP, text)
    worker REP     <- [peer, rid, body]   and replies [rid, body]
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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import zmq

from runtime import codec
from runtime.private_files import ensure_private_dir

RID_SIZE = 8
MAX_FRAMES = 8
BROADCAST = b"all"
IPC_PATH_MAX = 107  # sockaddr_un.sun_path on Linux, minus the NUL

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


DEFAULT_LIMITS = SocketLimits()


def make_socket(ctx: zmq.Context, kind: int, limits: SocketLimits = DEFAULT_LIMITS) -> zmq.Socket:
    """A socket of ``kind`` (zmq.ROUTER, zmq.DEALER, ...) with every bound of ``limits`` applied."""
    sock = ctx.socket(kind)
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
    return sock


# ------------------------------------------------------------------ addresses

def tcp_address(host: str, port: int) -> str:
    """``tcp://host:port`` for an IPv4 address or a host name (IPv6 is off)."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise AddressError(f"port must be 0..65535, got {port!r}")
    if not isinstance(host, str) or not host or any(c in host for c in "/[] \t\n") or ":" in host:
        raise AddressError(f"not an IPv4 address or host name: {host!r} (IPv6 is not supported)")
    return f"tcp://{host}:{port}"


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
    endpoint = sock.getsockopt(zmq.LAST_ENDPOINT).decode()
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://"):]
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode):
            os.chmod(path, 0o600)
    return endpoint


def bound_port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


# ------------------------------------------------------------------ framing helpers

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


# ------------------------------------------------------------------ rate limiting

class TokenBucketLimiter:
    """Per-peer token buckets: ``rate`` tokens a second up to ``burst``; at most ``max_peers``
    buckets (the least recently seen is forgotten, so memory stays bounded under a flood of
    sources).  Not thread-safe: one per proxy loop."""

    def __init__(self, rate: float, burst: float, *, max_peers: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.max_peers = max_peers
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, peer: str, cost: float = 1.0) -> bool:
        now = self.clock()
        tokens, last = self._buckets.pop(peer, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= cost
        if allowed:
            tokens -= cost
        self._buckets[peer] = (tokens, now)
        if len(self._buckets) > self.max_peers:
            self._buckets.popitem(last=False)
        return allowed

    def __len__(self) -> int:
        return len(self._buckets)


class ClearRateLimit:
    """Admission policy for :class:`RequestProxy`: clear envelopes (``_auth``, ``publish``,
    anything not shaped like an aes envelope) are charged to a per-peer bucket and, if set, a
    global one; aes envelopes pass (they cost the master one AEAD check before being refused)."""

    def __init__(self, per_peer: TokenBucketLimiter, global_bucket: TokenBucketLimiter | None = None) -> None:
        self.per_peer = per_peer
        self.global_bucket = global_bucket

    def __call__(self, peer: str, body: bytes) -> str | None:
        if codec.envelope_kind(body) == codec.ENC_AES:
            return None
        if not self.per_peer.allow(peer):
            return "rate_limited"
        if self.global_bucket is not None and not self.global_bucket.allow(""):
            return "busy"
        return None


# ------------------------------------------------------------------ ReqServer proxy and workers

@dataclass
class ProxyStats:
    forwarded: int = 0
    replies: int = 0
    malformed: int = 0
    refused: int = 0        # answered by the admit policy
    dropped_busy: int = 0   # no worker could take it


class RequestProxy:
    """ROUTER (clients, tcp ret_port) <-> DEALER (REP workers, workers.ipc), in Python so each
    request is checked before a worker sees it: frame shape (else dropped), the ``admit`` policy
    (a refusal is answered here with a clear error load), and the client's IP handed to the
    worker.  Replies are passed back unchanged.  :meth:`run` returns when ``stop`` is set.
    """

    def __init__(self, frontend: zmq.Socket, backend: zmq.Socket, *,
                 admit: Callable[[str, bytes], str | None] | None = None) -> None:
        self.frontend = frontend
        self.backend = backend
        self.admit = admit
        self.stats = ProxyStats()

    def _from_client(self) -> None:
        frames = recv_frames(self.frontend)
        if frames is None or len(frames) != 4 or frames[1].bytes != b"" or len(frames[2].bytes) != RID_SIZE:
            self.stats.malformed += 1
            return
        ident, _, rid, body = frames
        try:
            peer = body.get("Peer-Address") or "unknown"
        except (zmq.ZMQError, AttributeError):
            peer = "unknown"
        if self.admit is not None:
            refusal = self.admit(peer, body.buffer)
            if refusal is not None:
                self.stats.refused += 1
                reply = codec.pack_envelope(codec.ENC_CLEAR, codec.error_load(refusal, f"request refused: {refusal}"))
                try:
                    self.frontend.send_multipart([ident, b"", rid, reply], zmq.NOBLOCK, copy=False)
                except zmq.ZMQError:
                    pass
                return
        self.stats.forwarded += 1
        try:
            self.backend.send_multipart([ident, b"", peer.encode(), rid, body], zmq.NOBLOCK, copy=False)
        except zmq.Again:  # every worker queue is full: drop, the client retries
            self.stats.forwarded -= 1
            self.stats.dropped_busy += 1

    def _from_worker(self) -> None:
        frames = recv_frames(self.backend)
        if frames is None or len(frames) != 4 or frames[1].bytes != b"":
            self.stats.malformed += 1
            return
        self.stats.replies += 1
        try:
            self.frontend.send_multipart(frames, zmq.NOBLOCK, copy=False)
        except zmq.ZMQError:
            pass  # client gone or its queue full: ROUTER drops

    def run(self, stop: threading.Event, poll_ms: int = 100) -> None:
        poller = zmq.Poller()
        poller.register(self.frontend, zmq.POLLIN)
        poller.register(self.backend, zmq.POLLIN)
        while not stop.is_set():
            events = dict(poller.poll(poll_ms))
            if self.backend in events:
                for _ in range(100):
                    if not self.backend.poll(0, zmq.POLLIN):
                        break
                    self._from_worker()
            if self.frontend in events:
                for _ in range(100):
                    if not self.frontend.poll(0, zmq.POLLIN):
                        break
                    self._from_client()


@dataclass(frozen=True)
class WorkerRequest:
    peer: str
    rid: bytes
    body: bytes


def recv_request(sock: zmq.Socket, timeout_ms: int) -> WorkerRequest | None:
    """A worker's (REP) next request, or None on timeout.  A malformed one comes back with
    ``rid == b""``; answer every request (REP must) with :func:`send_reply`."""
    if not sock.poll(timeout_ms, zmq.POLLIN):
        return None
    frames = recv_frames(sock)
    if frames is None or len(frames) != 3:
        return WorkerRequest("unknown", b"", b"")
    return WorkerRequest(frames[0].bytes.decode("ascii", "replace"), frames[1].bytes, frames[2].bytes)


def send_reply(sock: zmq.Socket, rid: bytes, body: bytes) -> None:
    sock.send_multipart([rid, body], copy=False)


# ------------------------------------------------------------------ publish / subscribe

def minion_topic(minion_id: str) -> bytes:
    """Topic for publications meant for one minion (fixed length, so never a prefix of another)."""
    return b"id:" + hashlib.sha256(minion_id.encode()).hexdigest()[:32].encode()


def make_subscriber(ctx: zmq.Context, address: str, minion_id: str | None = None,
                    limits: SocketLimits = DEFAULT_LIMITS) -> zmq.Socket:
    """SUB connected to ``address``, subscribed to ``BROADCAST`` and the minion's own topic."""
    sock = make_socket(ctx, zmq.SUB, limits)
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
