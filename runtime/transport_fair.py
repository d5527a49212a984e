"""Fair queueing of the request proxy: lanes, flows, and worker time shared between flows.

Every admitted request belongs to a *lane* (who may send it) and, inside it, to a *flow* (who
sent it):

* ``operator``: ``publish``/``job_returns`` whose client proof verifies, in the proxy, under the
  master's own user's key — the operator's local client.  Served before every other lane: the
  operator's share is reserved, whatever the minions or other clients send.
* ``heartbeat``: sealed requests of a known session whose header is marked as a heartbeat's and
  whose size is a heartbeat's, one flow per minion as in ``session``, one request at a time per
  flow (the workers refuse a larger marked request before decrypting it, and one that is not a
  heartbeat); every other turn of the schedule;
* ``session``: sealed requests, one flow per minion (the session id is mapped to its minion by
  the workers' answers), or per source address while the session is not known;
* ``client``: other local users' requests, one flow per verified user, or per source address
  when the proof does not verify in the proxy (a junk publish);
* ``auth``: hellos and everything else, one flow per source address.

The other lanes take turns by a fixed schedule (``heartbeat`` every other turn, then mostly
``session``; an empty lane yields).  Hellos are *admitted* at the rate the workers sustain: the
``auth`` lane is not served while the ``session`` lane holds more than ``admission_backlog_s`` of
the workers' time (its waiting requests at the lane's recent cost), since each hello admitted
brings its minion's first requests soon after.
Inside a lane, the next request is the oldest of the flow that has had the least *worker time*
(seconds the workers spent on its requests, measured by the proxy from dispatch to reply): a
flow that sends 40,000 expensive requests gets the same share of the workers as a minion
sending one heartbeat, and that minion's heartbeat waits for at most one request of each other
flow.  A flow that comes back after a pause starts level with the others (it cannot bank
credit), and one that used more than its share waits until the others caught up (it cannot run
up debt and then escape it by pausing briefly, until the flow is forgotten as idle).  While
other flows wait, one flow may occupy at most all workers but one.

Each flow's queue is bounded, and so is each lane's: a request beyond its flow's bound is
refused (``busy``); when the lane is full, the newest request of its longest flow makes room (that
flow is the one refused ``busy``).  A request that waited longer than its client would is dropped.
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


FlowKey = tuple[str, str]      # ("minion", id), ("user", name), ("address", ip)


class Lane(enum.StrEnum):
    OPERATOR = "operator"
    HEARTBEAT = "heartbeat"     # sealed requests marked as heartbeats (the worker refuses anything else)
    SESSION = "session"
    CLIENT = "client"
    AUTH = "auth"


LANES: tuple[Lane, ...] = (Lane.OPERATOR, Lane.HEARTBEAT, Lane.SESSION, Lane.CLIENT, Lane.AUTH)
FIRST_COST_S = 0.002          # worker time charged at dispatch before a flow's cost is known
MAX_COST_S = 10.0


@dataclass(frozen=True)
class FairLimits:
    """Bounds and schedule (defaults for a master; ``QueueLimits`` of runtime.transport)."""

    max_waiting: dict[str, int] = field(default_factory=lambda: {
        Lane.OPERATOR: 500, Lane.HEARTBEAT: 4000, Lane.SESSION: 4000, Lane.CLIENT: 500, Lane.AUTH: 500})
    max_waiting_per_flow: dict[str, int] = field(default_factory=lambda: {
        Lane.OPERATOR: 500, Lane.HEARTBEAT: 4, Lane.SESSION: 200, Lane.CLIENT: 100, Lane.AUTH: 200})
    # a hello waits less than a minion's auth_timeout (5 s), so that its answer (``busy``: see
    # ``expire``) still reaches the minion; the others as long as a request_timeout (10 s)
    max_wait_s: dict[str, float] = field(default_factory=lambda: {
        Lane.OPERATOR: 10.0, Lane.HEARTBEAT: 10.0, Lane.SESSION: 10.0, Lane.CLIENT: 10.0, Lane.AUTH: 3.0})
    # requests of one flow at the workers at once, whatever else waits (lanes not named: no bound
    # but the proxy's per-flow limit): a minion's heartbeats one at a time, so that a minion
    # sending nothing but heartbeats holds at most one worker through their lane
    max_in_flight: dict[str, int] = field(default_factory=lambda: {Lane.HEARTBEAT: 1})
    # the lanes after the operator's, in turn; the others are served when the preferred one is empty.
    # Heartbeats (cheap, a few per minion and period) every other turn: a busy master's queue of
    # pillar compiles does not hold back the heartbeats that keep its minions' sessions, and a flood
    # of heartbeats gets at most half of the workers.
    schedule: tuple[str, ...] = (Lane.HEARTBEAT, Lane.SESSION, Lane.HEARTBEAT, Lane.SESSION, Lane.HEARTBEAT,
                                 Lane.CLIENT, Lane.HEARTBEAT, Lane.SESSION, Lane.HEARTBEAT, Lane.SESSION,
                                 Lane.HEARTBEAT, Lane.SESSION, Lane.HEARTBEAT, Lane.CLIENT, Lane.HEARTBEAT,
                                 Lane.AUTH)
    max_flows: int = 20_000       # flows remembered per lane (idle ones are forgotten beyond it)
    # Admission: hellos are not served while the minions' queued requests (the session lane) are
    # more than this many seconds of the workers' time.  A new session's first requests (its pillar)
    # follow its hello: 10,000 minions' hellos admitted faster than the workers answered those
    # requests left them waiting past their request_timeout, and the minions authenticated again.
    admission_backlog_s: float = 1.0


def _orders(schedule: list[Lane]) -> list[list[Lane]]:
    """The lanes to try at each turn of ``schedule``: the operator's, the entry's, the rest (the
    heartbeats' last: they get their own turns and no more while others wait).  A heartbeat turn
    with no heartbeat waiting goes to the next entry that is not one, so that the other lanes keep
    the shares the schedule gives them between its heartbeat turns."""
    orders = []
    for at, preferred in enumerate(schedule):
        head = [preferred]
        if preferred == Lane.HEARTBEAT:
            head.append(next((lane for lane in schedule[at:] + schedule[:at] if lane != Lane.HEARTBEAT),
                             Lane.SESSION))
        rest = [lane for lane in LANES if lane not in (Lane.OPERATOR, Lane.HEARTBEAT, *head)]
        orders.append([Lane.OPERATOR, *head, *rest, *([] if Lane.HEARTBEAT in head else [Lane.HEARTBEAT])])
    return orders


@dataclass(eq=False)
class Flow(Generic[T]):
    key: FlowKey
    lane: Lane
    queue: deque[tuple[float, T]] = field(default_factory=deque)
    usage: float = 0.0            # worker seconds attained (charged at dispatch, corrected at the reply)
    in_flight: int = 0
    cost: float = FIRST_COST_S    # recent worker seconds per request
    work: float = FIRST_COST_S    # the same less the workers' waits for a CPU (runtime.workclock), when told
    version: int = 0              # which heap entry is current
    last_active: float = 0.0


@dataclass
class _LaneState(Generic[T]):
    flows: dict[FlowKey, Flow[T]] = field(default_factory=dict)
    heap: list[tuple[float, int, int, Flow[T]]] = field(default_factory=list)
    waiting: int = 0
    vtime: float = 0.0            # the usage of the flow served last: where a returning flow starts
    # the flows with something waiting, by how many (a full lane pushes out one of the longest:
    # found in constant time; a scan of every flow at each push into a full lane, with 10,000
    # minions waiting one return each, cost the request proxy most of its CPU)
    by_length: dict[int, dict[Flow[T], None]] = field(default_factory=dict)
    longest: int = 0

    def append(self, flow: Flow[T], entry: tuple[float, T]) -> None:
        flow.queue.append(entry)
        self.waiting += 1
        self._moved(flow, len(flow.queue) - 1)

    def take_first(self, flow: Flow[T]) -> tuple[float, T]:
        entry = flow.queue.popleft()
        self.waiting -= 1
        self._moved(flow, len(flow.queue) + 1)
        return entry

    def take_last(self, flow: Flow[T]) -> tuple[float, T]:
        entry = flow.queue.pop()
        self.waiting -= 1
        self._moved(flow, len(flow.queue) + 1)
        return entry

    def _moved(self, flow: Flow[T], before: int) -> None:
        """``flow``'s queue went from ``before`` entries to its length now."""
        if before:
            bucket = self.by_length[before]
            del bucket[flow]
            if not bucket:
                del self.by_length[before]
        after = len(flow.queue)
        if after:
            self.by_length.setdefault(after, {})[flow] = None
        self.longest = max(self.longest, after)
        while self.longest and self.longest not in self.by_length:
            self.longest -= 1

    def one_of_the_longest(self) -> Flow[T] | None:
        bucket = self.by_length.get(self.longest)
        return next(iter(bucket)) if bucket else None

    def clear(self) -> None:
        self.waiting = 0
        self.heap.clear()
        self.by_length.clear()
        self.longest = 0


@dataclass
class Taken(Generic[T]):
    """A request handed to a worker: what :meth:`FairQueue.done` needs when its reply comes."""

    flow: Flow[T]
    item: T
    charged: float
    queued_at: float


class FairQueue(Generic[T]):
    def __init__(self, limits: FairLimits | None = None) -> None:
        self.limits = limits or FairLimits()
        self.lanes: dict[Lane, _LaneState[T]] = {lane: _LaneState() for lane in LANES}
        self._turn = 0
        self._seq = 0
        self._orders = _orders([Lane(name) for name in self.limits.schedule])
        self.lane_cost: dict[Lane, float] = dict.fromkeys(LANES, FIRST_COST_S)   # recent worker s per request

    # ------------------------------------------------------------ in
    def push(self, lane: Lane, key: FlowKey, item: T, now: float) -> tuple[bool, list[T]]:
        """Queue ``item`` of flow ``key``; returns (queued, items pushed out to make room), each of
        which (and ``item`` itself when not queued) must be answered ``busy``."""
        state = self.lanes[lane]
        flow = state.flows.get(key)
        if flow is None:
            flow = state.flows[key] = Flow(key, lane, usage=state.vtime, last_active=now)
        if len(flow.queue) >= self.limits.max_waiting_per_flow[lane]:
            return False, []
        pushed_out: list[T] = []
        if state.waiting >= self.limits.max_waiting[lane]:
            victim = state.one_of_the_longest()       # longer than this flow's by two, so not this flow
            if victim is None or len(victim.queue) <= len(flow.queue) + 1:
                return False, []
            pushed_out.append(state.take_last(victim)[1])
        if not flow.queue and flow.in_flight == 0:
            flow.usage = max(flow.usage, state.vtime)     # no credit banked while away
        state.append(flow, (now, item))
        flow.last_active = now
        if len(flow.queue) == 1:
            self._schedule(state, flow)
        return True, pushed_out

    def _schedule(self, state: _LaneState[T], flow: Flow[T]) -> None:
        flow.version += 1
        self._seq += 1
        heapq.heappush(state.heap, (flow.usage, self._seq, flow.version, flow))

    # ------------------------------------------------------------ out
    def lane_order(self) -> list[Lane]:
        """The lanes in the order the next request is looked for."""
        order = self._orders[self._turn % len(self._orders)]
        self._turn += 1
        return order

    def backlog_s(self, lane: Lane, workers: int) -> float:
        """The workers' time (s) the requests waiting in ``lane`` would take, by its recent cost."""
        return self.lanes[lane].waiting * self.lane_cost[lane] / max(1, workers)

    def admitting(self, workers: int) -> bool:
        """Whether hellos are served now (``FairLimits.admission_backlog_s``)."""
        return self.backlog_s(Lane.SESSION, workers) <= self.limits.admission_backlog_s

    def pop(self, now: float, per_flow_limit: int, expired: Callable[[Lane, T], None],
            blocked: Callable[[FlowKey], bool] = lambda key: False) -> Taken[T] | None:
        """The next request to hand to a worker, or None.  A flow with ``per_flow_limit`` requests
        at the workers is passed over while another flow has one waiting; a flow ``blocked`` says
        must wait (it left replies unread) is passed over whatever else waits; requests that
        waited longer than their lane's ``max_wait_s`` go to ``expired`` instead.  Hellos wait
        while the minions' queued requests are more than ``admission_backlog_s`` of work for
        ``per_flow_limit + 1`` workers."""
        order = self.lane_order()
        if not any(state.waiting for state in self.lanes.values()):
            return None              # (the common case, asked once more after each dispatch)
        held = bool(self.lanes[Lane.AUTH].waiting) and not self.admitting(per_flow_limit + 1)
        if held:
            order = [lane for lane in order if lane != Lane.AUTH]
        for strict in (True, False):
            for lane in order:
                taken = self._pop_lane(lane, now, per_flow_limit if strict else None, expired, blocked)
                if taken is not None:
                    return taken
        # nothing else can go now (what waits is blocked: flows leaving replies unread): a hello
        # rather than an idle worker
        return self._pop_lane(Lane.AUTH, now, None, expired, blocked) if held else None

    def pop_lane(self, lane: Lane, now: float, per_flow_limit: int, expired: Callable[[Lane, T], None],
                 blocked: Callable[[FlowKey], bool] = lambda key: False) -> Taken[T] | None:
        """As :meth:`pop`, from ``lane`` only, and never beyond ``per_flow_limit``."""
        return self._pop_lane(lane, now, per_flow_limit, expired, blocked) if self.lanes[lane].waiting else None

    def _pop_lane(self, lane: Lane, now: float, limit: int | None, expired: Callable[[Lane, T], None],
                  blocked: Callable[[FlowKey], bool]) -> Taken[T] | None:
        state = self.lanes[lane]
        aside: list[Flow[T]] = []
        cap = self.limits.max_in_flight.get(lane)
        if cap is not None:
            limit = cap if limit is None else min(limit, cap)
        try:
            while state.heap:
                _, _, version, flow = state.heap[0]
                if version != flow.version or not flow.queue:
                    heapq.heappop(state.heap)
                    continue
                if (limit is not None and flow.in_flight >= limit) or blocked(flow.key):
                    aside.append(heapq.heappop(state.heap)[3])
                    continue
                queued_at, item = state.take_first(flow)
                if now - queued_at > self.limits.max_wait_s[lane]:
                    expired(lane, item)
                    if not flow.queue:
                        heapq.heappop(state.heap)
                    continue
                heapq.heappop(state.heap)
                state.vtime = max(state.vtime, flow.usage)
                charged = flow.cost
                flow.usage += charged
                flow.in_flight += 1
                flow.last_active = now
                if flow.queue:
                    self._schedule(state, flow)
                return Taken(flow, item, charged, queued_at)
            return None
        finally:
            for flow in aside:
                self._schedule(state, flow)

    def done(self, taken: Taken[T], elapsed: float, now: float, *, ran: bool = True,
             work: float | None = None) -> None:
        """The reply to ``taken`` came after ``elapsed`` seconds at a worker (``ran=False``: it
        never reached one, its connection gone or its worker lost; the lane's cost is not moved),
        of which ``work`` were not spent waiting for a CPU (None: unknown, taken as ``elapsed``).
        Fair shares and the hellos' admission go by the wall time; how many requests are handed to
        a worker at once goes by the work, which does not shrink the batches on shared cores."""
        flow = taken.flow
        flow.in_flight = max(0, flow.in_flight - 1)
        elapsed = min(max(elapsed, 0.0), MAX_COST_S)
        flow.usage += elapsed - taken.charged
        flow.cost = 0.7 * flow.cost + 0.3 * elapsed
        flow.work = 0.7 * flow.work + 0.3 * (elapsed if work is None else min(max(work, 0.0), MAX_COST_S))
        if ran:
            self.lane_cost[flow.lane] = 0.9 * self.lane_cost[flow.lane] + 0.1 * elapsed
        flow.last_active = now
        if flow.queue:
            self._schedule(self.lanes[flow.lane], flow)

    # ------------------------------------------------------------ bookkeeping
    def expire(self, lane: Lane, now: float, expired: Callable[[Lane, T], None]) -> int:
        """Take out the requests of ``lane`` that waited longer than its ``max_wait_s`` (handed to
        ``expired``), without waiting for the lane to be served (hellos held back by admission are
        answered while their senders still wait).  Returns how many."""
        state = self.lanes[lane]
        limit = self.limits.max_wait_s[lane]
        flows = [flow for bucket in state.by_length.values() for flow in bucket]
        count = 0
        for flow in flows:
            while flow.queue and now - flow.queue[0][0] > limit:
                expired(lane, state.take_first(flow)[1])
                count += 1
        return count

    def waiting(self) -> dict[Lane, int]:
        return {lane: state.waiting for lane, state in self.lanes.items()}

    def total_waiting(self) -> int:
        return sum(state.waiting for state in self.lanes.values())

    def flows(self, lane: Lane) -> dict[FlowKey, Flow[T]]:
        return self.lanes[lane].flows

    def drain(self) -> Iterator[tuple[Lane, T]]:
        """Every waiting request, removed (for a proxy that stops)."""
        for lane, state in self.lanes.items():
            for flow in state.flows.values():
                while flow.queue:
                    yield lane, flow.queue.popleft()[1]
            state.clear()

    def forget_idle(self, now: float, idle_s: float = 60.0) -> int:
        """Forget flows with nothing waiting or at the workers that are owed nothing (or, beyond
        ``max_flows``, idle for ``idle_s``): the memory of flows stays bounded under a flood of
        sources.  Returns how many were forgotten."""
        forgotten = 0
        for state in self.lanes.values():
            crowded = len(state.flows) > self.limits.max_flows
            for key, flow in list(state.flows.items()):
                if flow.queue or flow.in_flight:
                    continue
                if flow.usage <= state.vtime or (crowded and now - flow.last_active > idle_s) \
                        or now - flow.last_active > 10 * idle_s:
                    del state.flows[key]
                    forgotten += 1
            if len(state.flows) > self.limits.max_flows:      # still too many: the longest idle go
                idle = sorted((f for f in state.flows.values() if not f.queue and not f.in_flight),
                              key=lambda f: f.last_active)
                for flow in idle[:len(state.flows) - self.limits.max_flows]:
                    del state.flows[flow.key]
                    forgotten += 1
        return forgotten
