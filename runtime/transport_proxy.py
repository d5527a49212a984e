"""The master's request proxy (ReqServer, ret_port 4506): per-peer rate limits, the fair queue of
requests in front of the workers, connection bounds, and the allocator setting its process needs.
Only the master's ReqServer process imports it; clients and minions need ``runtime.transport`` alone.

The framing it passes between clients and workers is described in ``runtime.transport``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import zmq

from runtime import codec
from runtime.protocol.base import MessageClass
from runtime.transport import (
    MAX_FRAMES,
    NOBLOCK,
    READY,
    RID_SIZE,
    WORKER_BATCH_MAX,
    decode_work,
    readable,
    recv_frames,
    send_parts,
)
from runtime.transport_conns import Connection, ConnectionLimits, ConnectionTable, frame_wire_size
from runtime.transport_fair import LANES, FairLimits, FairQueue, FlowKey, Lane, Taken
from runtime.transport_flows import ClientProofs, SessionDirectory, decode_meta, sealed_head
from runtime.transport_hellos import HelloBacklog

PROXY_REFUSALS = ("rate_limited", "busy")   # what the request proxy answers itself (runtime/protocol/errors.py)
# requests one client connection may have waiting in libzmq before the proxy reads them (honest
# clients have a handful in flight; a flood from one connection waits in its own kernel buffers)
FRONTEND_RCVHWM = 256


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


# Request classes (runtime.protocol.MessageClass) and the proxy's lanes (runtime.transport_fair.Lane).
CLASS_SESSION = MessageClass.SESSION    # sealed requests of minions with a session (heartbeats, returns, pillar, files)
CLASS_CLIENT = MessageClass.CLIENT      # publish / job_returns of local users proving their client key (cheap HMAC)
CLASS_AUTH = MessageClass.AUTH          # hellos (an Ed25519 verify and a key-store decision each) and anything else
REQUEST_CLASSES: tuple[MessageClass, ...] = (CLASS_SESSION, CLASS_CLIENT, CLASS_AUTH)
assert set(REQUEST_CLASSES) == set(MessageClass), "every message class needs a lane in the request proxy"
assert {str(kind) for kind in MessageClass} <= {str(lane) for lane in LANES}


class ClearRateLimit:
    """Admission policy for :class:`RequestProxy`, by lane (``runtime.transport_fair``): hellos and
    anything not a sealed or client request are charged to a per-peer bucket and, if set, a
    global one; sealed requests pass (they are fair-queued per minion, and cost the master one
    AEAD check before being refused); the operator's verified requests pass.

    With ``client_per_peer``, other client requests are charged to that bucket only, keyed by the
    verified user (``user:<name>``) or by the peer's address: a flood of hellos from many
    addresses, which empties the global bucket, then cannot refuse a local user's job."""

    def __init__(self, per_peer: TokenBucketLimiter, global_bucket: TokenBucketLimiter | None = None,
                 client_per_peer: TokenBucketLimiter | None = None) -> None:
        self.per_peer = per_peer
        self.global_bucket = global_bucket
        self.client_per_peer = client_per_peer

    def __call__(self, peer: str, kind: str) -> str | None:
        if kind in (Lane.SESSION, Lane.HEARTBEAT, Lane.OPERATOR):
            return None
        if kind == Lane.CLIENT and self.client_per_peer is not None:
            return None if self.client_per_peer.allow(peer) else "rate_limited"
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
    dropped_busy: int = 0   # its flow's or lane's queue was full: answered "busy"
    expired: int = 0        # waited longer than the client would (dropped unanswered; a hello: answered "busy")
    workers_lost: int = 0   # a worker vanished while the proxy was sending to it
    held_unread: int = 0    # dropped: its flow left more than max_unread_reply_bytes of replies unread
    dropped_gone: int = 0   # dropped unanswered: the connection it came on closed while it waited


QueueLimits = FairLimits     # the proxy's queue bounds and schedule (runtime.transport_fair)

EXPIRE_EVERY_S = 0.1         # how often the auth lane is searched for hellos that waited too long
BATCH_WORK_S = 0.02          # a worker is handed more requests at once while their flows' recent work is below this

@dataclass(eq=False)
class _Pending:
    """A request waiting in the proxy or at a worker."""

    client: bytes                       # the ROUTER identity to answer
    peer: bytes                         # the client's address, as text
    rid: bytes
    body: zmq.Frame
    conn: Connection | None             # the connection it came on
    serial: int
    sid: bytes | None                   # a sealed request's session id (canonically packed)


def _recv_counted(sock: zmq.Socket) -> tuple[list[zmq.Frame] | None, int, int | None]:
    """One whole message from a ROUTER without blocking: (its frames, or None when it has more than
    MAX_FRAMES, drained; the wire size of the frames the peer sent; the descriptor it came on)."""
    first = sock.recv(zmq.NOBLOCK, copy=False)
    try:
        fd: int | None = int(first.get(zmq.SRCFD))
    except (zmq.ZMQError, AttributeError, TypeError, ValueError):
        fd = None
    frames: list[zmq.Frame] | None = [first]
    wire = 0
    more = first.more
    while more:
        frame = sock.recv(zmq.NOBLOCK, copy=False)
        wire += frame_wire_size(len(frame))
        more = frame.more
        if frames is not None:
            if len(frames) >= MAX_FRAMES:
                frames = None            # drain the rest without keeping it
            else:
                frames.append(frame)
    return frames, wire, fd


class RequestProxy:
    """ROUTER (clients, tcp ret_port) <-> ROUTER (workers, workers.ipc), in Python so each
    request is checked before a worker sees it and so that no one sender can starve the others.

    * Frame shape: anything but ``[identity, b"", rid(8), body]`` is dropped (counted, logged
      once per interval).
    * Classification (:func:`runtime.protocol.classify_request`, the workers' own decoding and
      command table) and flow (``runtime.transport_flows``): the lane and the flow — the minion
      of a sealed request's session, the verified user of a client request (the master's own
      user: the operator's reserved lane), else the sender's address.
    * Admission (``admit(peer, lane)``, e.g. :class:`ClearRateLimit`): a refusal is answered
      here with a clear error load; the workers never see it.
    * Connections (``runtime.transport_conns``): a bounded number, silent and idle ones closed,
      unfinished messages bounded per connection and in all; a flow whose connections leave more
      than ``max_unread`` bytes of replies unread gets nothing more served until it reads them.
    * Scheduling (``runtime.transport_fair``): bounded queues per flow and per lane, the operator
      first, then the lanes in turn, and inside a lane the flow that has had the least worker time
      so far.  Workers (DEALER, :class:`WorkerSocket`) announce ``READY`` when idle and are handed
      one request; only while more wait than there are idle workers, a worker is handed several
      minions' requests at once (up to ``WORKER_BATCH_MAX``, and about ``BATCH_WORK_S`` of the work
      their flows' requests took so far, as the workers measure it: without their waits for a CPU,
      ``runtime.workclock``), which it answers in turn — so that a burst of minions' returns is
      stored with one commit per handful, not one each — and the backlog inside a worker stays
      that small.
    * Requests older than their lane's ``max_wait_s`` are dropped unanswered (the client already
      retried), except hellos: answered ``busy`` (their lane's bound is under the minions'
      auth_timeout), also while admission holds them back (``FairQueue.admitting``).  Replies are passed back unchanged; a worker's reply may carry the session it
      served (:func:`runtime.transport_flows.encode_meta`), which is how the proxy learns which minion a session is.

    Frames: proxy -> worker ``[worker, b"", client, peer, rid, body]`` (``client, peer, rid, body``
    once per request handed together); worker -> proxy, for each request
    ``[worker, b"", client, rid, reply, meta, work]`` (``meta``: :func:`encode_meta` or empty;
    ``work``: :func:`runtime.transport.encode_work`; both may be left off) or ``[worker, b"", READY]``.
    :meth:`run` returns when ``stop`` is set.
    """

    def __init__(self, frontend: zmq.Socket, backend: zmq.Socket, *,
                 admit: Callable[[str, str], str | None] | None = None, limits: FairLimits | None = None,
                 log: Any = None, clock: Callable[[], float] = time.monotonic,
                 connections: ConnectionLimits | None = None, proofs: ClientProofs | None = None,
                 hellos: HelloBacklog | None = None) -> None:
        self.frontend = frontend
        self.backend = backend
        self.admit = admit
        self.fair: FairQueue[_Pending] = FairQueue(limits)
        self.limits = self.fair.limits
        self.log = log            # a RateLimitedLog (or None)
        self.clock = clock
        self.stats = ProxyStats()
        self.conns = ConnectionTable(frontend, connections or ConnectionLimits(), note=self._note, info=self._info,
                                     clock=clock)
        self.sessions = SessionDirectory()
        self.proofs = proofs
        # idle workers, in the order they became idle; the last one is handed the next request: under
        # a light load (heartbeats) the same few workers stay warm and the others sleep, instead of
        # every worker waking in turn (a fifth less CPU for the heartbeats of 1,000 idle minions)
        self.ready: OrderedDict[bytes, None] = OrderedDict()
        # worker -> (when it was handed them, what it was handed and has not answered yet)
        self.busy: dict[bytes, _Handed] = {}
        self._replies: dict[tuple[str, float | None], bytes] = {}
        self.hellos = hellos or HelloBacklog()     # the retry window told to minions refused a hello
        self._next_forget = 0.0
        self._next_expire = 0.0
        from runtime.protocol.registry import classify_request  # the command table: only a proxy needs it

        self._classify = classify_request
        backend.setsockopt(zmq.ROUTER_MANDATORY, 1)

    def _note(self, key: str, msg: str, *args: Any) -> None:
        if self.log is not None:
            self.log.warning(key, msg, *args)

    def _info(self, key: str, msg: str, *args: Any) -> None:
        if self.log is not None:
            self.log.info(key, msg, *args)

    def _answer(self, ident: Any, rid: Any, reason: str, pending: _Pending | None = None,
                retry_s: float | None = None) -> None:
        reply = self._replies.get((reason, retry_s))
        if reply is None:  # packed once per reason (and hint): refusing must cost as little as possible
            load = codec.error_load(reason, f"request refused: {reason}")
            if retry_s is not None:
                load["error"]["retry_s"] = retry_s
            reply = self._replies[(reason, retry_s)] = codec.pack_envelope(codec.ENC_CLEAR, load)
        self._send_reply(ident, rid, reply, pending)

    def _refuse(self, lane: Lane, pending: _Pending, reason: str = "busy") -> None:
        """Answer ``pending`` refused; a hello refused ``busy`` also names the window its minion
        should come back within (runtime/transport_hellos.py)."""
        if reason != "busy" or lane != Lane.AUTH:
            self._answer(pending.client, pending.rid, reason, pending)
            return
        now = self.clock()
        self.hellos.refused(pending.peer, now)
        self._answer(pending.client, pending.rid, "busy", pending, self.hellos.retry_s(now))

    def _closed(self, pending: _Pending) -> bool:
        """Whether the connection ``pending`` came on closed (counted: dropped unanswered)."""
        if pending.conn is None or self.conns.alive(pending.conn, pending.serial):
            return False
        self.stats.dropped_gone += 1
        return True

    def _send_reply(self, client: Any, rid: Any, reply: Any, pending: _Pending | None) -> None:
        try:
            send_parts(self.frontend, [client, b"", rid, reply], NOBLOCK)
        except zmq.ZMQError:
            return   # client gone or its queue full: ROUTER drops
        if pending is not None:
            self.conns.reply(pending.conn, pending.serial,
                             2 + frame_wire_size(RID_SIZE) + frame_wire_size(len(reply)))

    # ------------------------------------------------------------ classification
    def _flow(self, kind: MessageClass, envelope: codec.Envelope | None, sid: bytes | None,
              peer: str, heartbeat: bool = False) -> tuple[Lane, FlowKey]:
        if kind == CLASS_SESSION:
            minion = self.sessions.minion(sid) if sid is not None else None
            if minion is None:
                return Lane.SESSION, ("address", peer)
            # the heartbeat lane for a known session's marked request only (sealed_head reads the
            # mark on a body of a heartbeat's size alone); the worker refuses a marked ciphertext
            # over a heartbeat's size before opening it, and a marked request other than a heartbeat
            return Lane.HEARTBEAT if heartbeat else Lane.SESSION, ("minion", minion)
        if kind == CLASS_CLIENT:
            if self.proofs is not None:
                return self.proofs.flow(envelope.load if envelope is not None else None, peer)
            return Lane.CLIENT, ("address", peer)
        return Lane.AUTH, ("address", peer)

    def _from_client(self) -> None:
        frames, wire, fd = _recv_counted(self.frontend)
        conn = self.conns.request(fd, wire)
        if frames is None or len(frames) != 4 or frames[1].bytes != b"" or len(frames[2].bytes) != RID_SIZE:
            self.stats.malformed += 1
            self._note("proxy:malformed", "dropped a malformed request (%s frames; need 4 with an 8-byte id)",
                       "over 8" if frames is None else len(frames))
            return
        ident, _, rid, body = frames
        try:
            peer = str(body.get("Peer-Address") or "unknown")
        except (zmq.ZMQError, AttributeError):
            peer = "unknown"
        kind, envelope = self._classify(body.buffer)
        sid, heartbeat = sealed_head(body.buffer) if kind == CLASS_SESSION else (None, False)
        lane, flow = self._flow(kind, envelope, sid, peer, heartbeat)
        pending = _Pending(ident.bytes, peer.encode(), rid.bytes, body, conn, conn.serial if conn else 0, sid)
        self.conns.bind_flow(conn, flow)
        if self.admit is not None:
            refusal = self.admit(f"user:{flow[1]}" if lane == Lane.CLIENT and flow[0] == "user" else peer, lane)
            if refusal is not None:
                self.stats.refused += 1
                self._note(f"proxy:{refusal}:{lane}", "refused %s request from %s (%s)", lane, peer, refusal)
                self._refuse(lane, pending, refusal)
                return
        unread = self.conns.over_unread(flow)
        queued, pushed_out = self.fair.push(lane, flow, pending, self.clock())
        if unread:   # waits (served once its replies are read); if its queue is full, it is dropped unanswered
            self._hold_unread(lane, flow)
            if not queued:
                return
        for other in [*pushed_out, *([] if queued else [pending])]:
            self.stats.dropped_busy += 1
            self._refuse(lane, other)
        if pushed_out or not queued:
            self._note(f"proxy:busy:{lane}", "refused %s requests (busy): %s has %d waiting (its lane %d)", lane,
                       _shown(flow), len(self.fair.flows(lane)[flow].queue) if flow in self.fair.flows(lane) else 0,
                       self.fair.waiting()[lane])

    def _hold_unread(self, lane: Lane, flow: FlowKey) -> None:
        """A request of a flow that does not read its replies: it waits in its flow's queue, which
        is not served until the replies are read (or it expires); beyond the queue's bound it is
        dropped unanswered (its sender would not read the answer either)."""
        self.stats.held_unread += 1
        self._note(f"proxy:unread:{lane}", "holding %s requests of %s: its connections leave %d bytes of replies "
                   "unread (max_unread_reply_bytes %d)", lane, _shown(flow), self.conns.unread_of(flow),
                   self.conns.limits.max_unread)

    def _from_worker(self) -> None:
        frames = recv_frames(self.backend)
        if frames is None or len(frames) < 3 or frames[1].bytes != b"":
            self.stats.malformed += 1
            return
        worker = frames[0].bytes
        if len(frames) == 3 and frames[2].bytes == READY:
            if worker not in self.busy:        # an idle announcement racing a dispatch is ignored
                self.ready[worker] = None
            return
        if len(frames) not in (5, 6, 7):
            self.stats.malformed += 1
            return
        now = self.clock()
        client, rid, reply = frames[2], frames[3], frames[4]
        pending = None
        entry = self.busy.get(worker)
        if entry is not None:
            taken = entry.answered(client.bytes, rid.bytes)
            if taken is not None:
                # its time at the worker: the requests handed together share the time until the first reply
                # (a worker answers them once it has served all)
                self.fair.done(taken, entry.share(now), now,
                               work=decode_work(frames[6].bytes) if len(frames) == 7 else None)
                pending = taken.item
            if not entry.waiting:
                del self.busy[worker]
        if worker not in self.busy:
            self.ready[worker] = None
        self.stats.replies += 1
        if len(frames) >= 6:
            meta = decode_meta(frames[5].bytes)
            if meta is not None:
                self.sessions.learn(*meta)
                if pending is not None:
                    self.conns.bind_flow(pending.conn, ("minion", meta[1]))
        self._send_reply(client, rid, reply, pending)

    def _expired(self, lane: Lane, pending: _Pending) -> None:
        if self._closed(pending):     # nobody to answer, nor to count as turned away
            return
        self.stats.expired += 1
        if lane == Lane.AUTH:
            # its minion still waits (the lane's max_wait_s is under auth_timeout): told to come back
            self._refuse(lane, pending)
            self._note(f"proxy:expired:{lane}", "refused %s requests that waited over %.0f s (busy)", lane,
                       self.limits.max_wait_s[lane])
            return
        self._note(f"proxy:expired:{lane}", "dropped %s requests that waited over %.0f s", lane,
                   self.limits.max_wait_s[lane])

    def _dispatch(self) -> None:
        while self.ready:
            now = self.clock()
            taken = self.fair.pop(now, max(1, len(self.ready) + len(self.busy) - 1), self._expired,
                                  self.conns.over_unread)
            if taken is None:
                return
            if self._gone(taken, now):
                continue
            if taken.flow.lane == Lane.AUTH:
                self.hellos.admitted(taken.item.peer, now)
            worker, _ = self.ready.popitem(last=True)   # the one idle the shortest: see self.ready
            handed = [taken, *self._more_for_one_worker(taken, now)]
            frames: list[Any] = [worker, b""]
            for one in handed:
                frames += [one.item.client, one.item.peer, one.item.rid, one.item.body]
            try:
                send_parts(self.backend, frames, NOBLOCK)
            except zmq.ZMQError:   # the worker is gone (restarted): forget it, try the requests again
                self.stats.workers_lost += 1
                for one in handed:
                    self.fair.done(one, 0.0, now, ran=False)
                    self.fair.push(one.flow.lane, one.flow.key, one.item, one.queued_at)
                continue
            self.busy[worker] = _Handed(now, handed)
            self.stats.forwarded += len(handed)
        # forget workers that never answered for a long time (died mid-request)
        if len(self.busy) > 256:
            cutoff = self.clock() - 600
            for worker in [w for w, entry in self.busy.items() if entry.since < cutoff]:
                for one in self.busy.pop(worker).waiting:
                    self.fair.done(one, 0.0, self.clock(), ran=False)

    def _gone(self, taken: Taken[_Pending], now: float) -> bool:
        """Whether the connection ``taken`` came on closed: then it is dropped unanswered (nobody to
        answer: a flood's backlog must not keep the workers busy after it left)."""
        if not self._closed(taken.item):
            return False
        self.fair.done(taken, 0.0, now, ran=False)
        return True

    def _more_for_one_worker(self, first: Taken[_Pending], now: float) -> list[Taken[_Pending]]:
        """Requests handed to a worker with ``first``: minions' requests (the session lane: their
        returns are stored together) while more wait than the idle workers left can take, up to
        ``WORKER_BATCH_MAX`` of them and ``BATCH_WORK_S`` of their flows' recent cost."""
        more: list[Taken[_Pending]] = []
        lane = first.flow.lane
        if lane != Lane.SESSION:
            return more
        work = first.flow.work
        while (len(more) + 1 < WORKER_BATCH_MAX and work < BATCH_WORK_S
               and self.fair.total_waiting() > len(self.ready)):
            taken = self.fair.pop_lane(lane, now, max(1, len(self.ready) + len(self.busy)), self._expired,
                                       self.conns.over_unread)
            if taken is None:
                break
            if self._gone(taken, now):
                continue
            more.append(taken)
            work += taken.flow.work
        return more

    def waiting(self) -> dict[Lane, int]:
        return self.fair.waiting()

    def _housekeeping(self) -> None:
        self.conns.sweep()
        now = self.clock()
        if now >= self._next_expire:     # hellos held back by admission: answered before their minion gives up
            self._next_expire = now + EXPIRE_EVERY_S
            self.fair.expire(Lane.AUTH, now, self._expired)
        if now >= self._next_forget:
            self._next_forget = now + 5.0
            self.fair.forget_idle(now)

    def run(self, stop: threading.Event, poll_ms: int = 100) -> None:
        poller = zmq.Poller()
        poller.register(self.frontend, zmq.POLLIN)
        poller.register(self.backend, zmq.POLLIN)
        poller.register(self.conns.monitor, zmq.POLLIN)
        try:
            while not stop.is_set():
                events = dict(poller.poll(min(poll_ms, int(self.conns.limits.sweep_s * 1000))))
                if self.conns.monitor in events:
                    self.conns.poll_events()
                if self.backend in events:
                    for _ in range(200):
                        if not readable(self.backend):
                            break
                        self._from_worker()
                if self.frontend in events:
                    for _ in range(200):
                        if not readable(self.frontend):
                            break
                        self._from_client()
                self._dispatch()
                self._housekeeping()
        finally:
            self.conns.close()


class _Handed:
    """What one worker was handed (one request, or several together) and has not answered yet."""

    def __init__(self, since: float, waiting: list[Taken[_Pending]]) -> None:
        self.since = since
        self.waiting = waiting
        self.size = len(waiting)
        self._share: float | None = None

    def answered(self, client: bytes, rid: bytes) -> Taken[_Pending] | None:
        """Take the request a reply answers (replies come in order: nearly always the first)."""
        for index, taken in enumerate(self.waiting):
            if taken.item.rid == rid and taken.item.client == client:
                return self.waiting.pop(index)
        return None

    def share(self, now: float) -> float:
        """Each request's part of the worker's time (the time until its first reply, shared out)."""
        if self._share is None:
            self._share = (now - self.since) / self.size
        return self._share


def return_large_buffers_to_os() -> bool:
    """Make this process's allocator give every large buffer (a reply of a file chunk, a pillar)
    back to the system when freed (glibc: a fixed ``M_MMAP_THRESHOLD`` of 256 KiB, at most two
    arenas).  glibc otherwise raises the threshold after the first large frees and serves later
    ones from its arenas, which keep the memory: a proxy passing thousands of 1 MiB replies grew by
    tens of MiB more than it ever held at once.  False where there is no glibc ``mallopt``."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_mmap_threshold, m_arena_max = -3, -8
    return bool(mallopt(m_mmap_threshold, 256 * 1024)) and bool(mallopt(m_arena_max, 2))


def _shown(flow: FlowKey) -> str:
    """A flow key for the log: ``minion web01``, ``address 10.0.0.5``, ``user alice``."""
    if isinstance(flow, tuple) and len(flow) == 2:
        return f"{flow[0]} {str(flow[1])[:64]}"
    return str(flow)[:64]
