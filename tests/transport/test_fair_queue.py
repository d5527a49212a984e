"""The request proxy's fair queueing (runtime/transport_fair.py), without sockets: worker time
shared between flows, the operator's lane first, bounds per flow and per lane, no credit banked,
no debt escaped, expiry, idle flows forgotten."""

from __future__ import annotations

from runtime.transport_fair import FairLimits, FairQueue, Lane

NEVER = lambda lane, item: (_ for _ in ()).throw(AssertionError(f"expired {item}"))  # noqa: E731


def serve(queue: FairQueue, now: float, costs: dict, rounds: int, workers: int = 1) -> list:
    """Serve ``rounds`` requests one at a time; each takes ``costs[flow]`` seconds of worker time."""
    order = []
    for _ in range(rounds):
        taken = queue.pop(now, workers, NEVER)
        if taken is None:
            break
        order.append(taken.item)
        queue.done(taken, costs[taken.flow.key], now)
    return order


def test_a_flood_of_expensive_requests_gets_a_fair_share_of_worker_time() -> None:
    """The issue's instance in small: one minion queues 150 pillar requests (50 ms of worker
    time each), another a heartbeat every round (1 ms): the heartbeats are served at once,
    and the flood gets about as much worker time as the honest minion uses, not all of it."""
    queue: FairQueue[str] = FairQueue()
    rogue, honest = ("minion", "rogue01"), ("minion", "web01")
    for i in range(150):
        assert queue.push(Lane.SESSION, rogue, f"pillar{i}", 0.0)[0]
    served = []
    for i in range(20):
        queue.push(Lane.SESSION, honest, f"beat{i}", 0.0)
        served += serve(queue, 0.0, {rogue: 0.05, honest: 0.001}, 2)
    beats = [s for s in served if s.startswith("beat")]
    assert len(beats) == 20, served
    assert all(served.index(f"beat{i}") < 2 * (i + 1) + 1 for i in range(20)), served
    assert sum(s.startswith("pillar") for s in served) <= 20


def test_flows_share_workers_by_time_not_by_count() -> None:
    queue: FairQueue[str] = FairQueue()
    heavy, light = ("minion", "heavy"), ("minion", "light")
    for i in range(100):
        queue.push(Lane.SESSION, heavy, f"h{i}", 0.0)
        queue.push(Lane.SESSION, light, f"l{i}", 0.0)
    served = serve(queue, 0.0, {heavy: 0.010, light: 0.001}, 110)
    # ten cheap requests for each expensive one, give or take the first estimates
    assert 80 <= sum(s.startswith("l") for s in served) <= 100, served


def test_the_operator_lane_goes_first_and_lanes_take_turns() -> None:
    queue: FairQueue[str] = FairQueue()
    for i in range(10):
        queue.push(Lane.AUTH, ("address", "10.0.0.9"), f"hello{i}", 0.0)
        queue.push(Lane.SESSION, ("minion", "m"), f"sealed{i}", 0.0)
        queue.push(Lane.CLIENT, ("address", "10.0.0.8"), f"junk{i}", 0.0)
    queue.push(Lane.OPERATOR, ("user", "root"), "publish", 0.0)
    served = serve(queue, 0.0, {("address", "10.0.0.9"): 0.001, ("minion", "m"): 0.001,
                                ("address", "10.0.0.8"): 0.001, ("user", "root"): 0.001}, 17)
    assert served[0] == "publish"
    # no heartbeat waits: its turns go to the lanes after them, which keep their shares (5:2:1)
    lanes = [s.rstrip("0123456789") for s in served[1:17]]
    assert lanes.count("sealed") == 10 and lanes.count("junk") == 4 and lanes.count("hello") == 2, lanes


def test_heartbeats_are_served_ahead_of_a_queue_of_pillar_compiles() -> None:
    """Forty minions each queued a pillar request (50 ms of worker time); a heartbeat arriving now
    is served within two dispatches, not after the forty."""
    queue: FairQueue[str] = FairQueue()
    for m in range(40):
        queue.push(Lane.SESSION, ("minion", f"m{m}"), f"pillar{m}", 0.0)
    costs = {("minion", f"m{m}"): 0.05 for m in range(40)}
    served = serve(queue, 0.0, costs, 3)
    queue.push(Lane.HEARTBEAT, ("minion", "m39"), "beat", 0.0)
    served += serve(queue, 0.0, costs, 2)
    assert "beat" in served[3:5], served


def test_a_flood_of_heartbeats_gets_at_most_half_of_the_dispatches() -> None:
    queue: FairQueue[str] = FairQueue()
    for i in range(200):
        queue.push(Lane.HEARTBEAT, ("minion", f"r{i % 50}"), f"beat{i}", 0.0)
    for i in range(100):
        queue.push(Lane.SESSION, ("minion", f"m{i}"), f"pillar{i}", 0.0)
    costs = {**{("minion", f"r{i}"): 0.001 for i in range(50)}, **{("minion", f"m{i}"): 0.05 for i in range(100)}}
    served = serve(queue, 0.0, costs, 64)
    assert sum(s.startswith("pillar") for s in served) == 32, served


def test_a_full_flow_is_refused_and_a_full_lane_pushes_out_the_longest_flow() -> None:
    limits = FairLimits(max_waiting={**FairLimits().max_waiting, Lane.AUTH: 10},
                        max_waiting_per_flow={**FairLimits().max_waiting_per_flow, Lane.AUTH: 8})
    queue: FairQueue[str] = FairQueue(limits)
    flood, honest = ("address", "10.0.0.66"), ("address", "10.0.0.2")
    results = [queue.push(Lane.AUTH, flood, f"f{i}", 0.0) for i in range(12)]
    assert [queued for queued, _ in results] == [True] * 8 + [False] * 4    # its own bound
    queue.push(Lane.AUTH, ("address", "10.0.0.67"), "g0", 0.0)
    queue.push(Lane.AUTH, ("address", "10.0.0.67"), "g1", 0.0)
    queued, pushed_out = queue.push(Lane.AUTH, honest, "hello", 0.0)   # the lane is full (10)
    assert queued and pushed_out == ["f7"], pushed_out                  # the flood's newest made room
    assert queue.waiting()[Lane.AUTH] == 10


def test_a_returning_flow_banks_no_credit_and_escapes_no_debt() -> None:
    queue: FairQueue[str] = FairQueue()
    a, b, c = ("minion", "a"), ("minion", "b"), ("minion", "c")
    for i in range(50):
        queue.push(Lane.SESSION, a, f"a{i}", 0.0)
        queue.push(Lane.SESSION, b, f"b{i}", 0.0)
    serve(queue, 0.0, {a: 0.01, b: 0.01}, 60)
    # c was idle all along: it starts level with the others, not 300 ms ahead of them
    for i in range(10):
        queue.push(Lane.SESSION, c, f"c{i}", 0.0)
    served = serve(queue, 0.0, {a: 0.01, b: 0.01, c: 0.01}, 9)
    assert 2 <= sum(s.startswith("c") for s in served) <= 4, served


def test_a_flow_may_not_take_every_worker_while_others_wait() -> None:
    queue: FairQueue[str] = FairQueue()
    rogue, honest = ("minion", "rogue"), ("minion", "honest")
    for i in range(10):
        queue.push(Lane.SESSION, rogue, f"r{i}", 0.0)
    first = queue.pop(0.0, 1, NEVER)               # two workers: each flow at most one while others wait
    queue.push(Lane.SESSION, honest, "h0", 0.0)
    second = queue.pop(0.0, 1, NEVER)
    assert (first.item, second.item) == ("r0", "h0")
    third = queue.pop(0.0, 1, NEVER)               # nobody else waits: work-conserving
    assert third is not None and third.item == "r1"


def test_a_blocked_flow_waits_whatever_else_is_idle() -> None:
    queue: FairQueue[str] = FairQueue()
    queue.push(Lane.SESSION, ("minion", "deaf"), "chunk", 0.0)
    assert queue.pop(0.0, 4, NEVER, blocked=lambda key: key == ("minion", "deaf")) is None
    assert queue.pop(0.0, 4, NEVER).item == "chunk"


def test_old_requests_expire_and_idle_flows_are_forgotten() -> None:
    queue: FairQueue[str] = FairQueue(FairLimits(max_flows=100))
    expired = []
    queue.push(Lane.AUTH, ("address", "1.1.1.1"), "old", 0.0)
    queue.push(Lane.AUTH, ("address", "1.1.1.1"), "new", 5.5)
    taken = queue.pop(6.0, 1, lambda lane, item: expired.append(item))
    assert expired == ["old"] and taken.item == "new"
    queue.done(taken, 0.0, 6.0)
    for i in range(500):
        queue.push(Lane.AUTH, ("address", f"10.0.{i // 256}.{i % 256}"), "x", 10.0)
    while (taken := queue.pop(10.0, 1, NEVER)) is not None:
        queue.done(taken, 0.002, 10.0)
    queue.forget_idle(1000.0)
    assert len(queue.flows(Lane.AUTH)) <= 100


def test_a_minions_heartbeats_go_to_the_workers_one_at_a_time() -> None:
    """A minion sending nothing but heartbeats holds at most one worker through their lane."""
    queue: FairQueue[str] = FairQueue()
    beats = ("minion", "r")
    for i in range(4):
        queue.push(Lane.HEARTBEAT, beats, f"beat{i}", 0.0)
    queue.push(Lane.SESSION, ("minion", "m"), "pillar", 0.0)
    first = queue.pop(0.0, 10, NEVER)
    second = queue.pop(0.0, 10, NEVER)
    assert first is not None and second is not None and (first.item, second.item) == ("beat0", "pillar")
    assert queue.pop(0.0, 10, NEVER) is None          # beat1 waits for beat0's reply
    queue.done(first, 0.001, 0.0)
    third = queue.pop(0.0, 10, NEVER)
    assert third is not None and third.item == "beat1"


def test_a_full_lane_of_many_flows_finds_its_longest_without_looking_at_each() -> None:
    """10,000 minions each with one return waiting fill the session lane: a push into it is refused
    (no flow is longer than the newcomer's by two), and the flow to push out, when there is one, is
    known at once.  Each such push used to look at every flow the lane remembers: 10,000 minions
    retrying their returns cost the request proxy most of its CPU and a ping to all 5-18 s."""
    import time

    limits = FairLimits(max_waiting={**FairLimits().max_waiting, Lane.SESSION: 500})
    queue: FairQueue[str] = FairQueue(limits)
    for i in range(20_000):                        # flows the lane remembers, nothing waiting
        queue.push(Lane.SESSION, ("minion", f"idle{i}"), "r", 0.0)
        taken = queue.pop(0.0, 1, NEVER)
        assert taken is not None
        queue.done(taken, 0.001, 0.0)
    for i in range(500):
        assert queue.push(Lane.SESSION, ("minion", f"m{i}"), "r", 0.0)[0]
    start = time.process_time()
    results = [queue.push(Lane.SESSION, ("minion", f"late{i}"), "r", 0.0) for i in range(20_000)]
    spent = time.process_time() - start
    assert all(result == (False, []) for result in results)
    assert spent < 1.0, f"{spent:.2f} s of CPU for 20,000 pushes into a full lane"
    for _ in range(2):                             # two served: room for one flow to hold more
        assert queue.pop(0.0, 1, NEVER) is not None
    for i in range(2):
        assert queue.push(Lane.SESSION, ("minion", "m499"), f"x{i}", 0.0)[0]
    assert queue.waiting()[Lane.SESSION] == 500
    queued, pushed_out = queue.push(Lane.SESSION, ("minion", "newcomer"), "hello", 0.0)
    assert queued and pushed_out == ["x1"], pushed_out      # the longest flow's newest made room
    assert queue.push(Lane.SESSION, ("minion", "other"), "hello", 0.0) == (True, ["x0"])
    assert queue.push(Lane.SESSION, ("minion", "third"), "hello", 0.0) == (False, [])


def test_hellos_wait_while_the_minions_queued_requests_are_more_than_the_admission_backlog() -> None:
    """Five workers, 2,000 minions' first requests queued at 5 ms each (2 s of the workers' time):
    hellos are not served, whatever the schedule's turns, until that backlog is down to 1 s."""
    queue: FairQueue[str] = FairQueue(FairLimits(admission_backlog_s=1.0))
    minions = [("minion", f"m{i}") for i in range(2000)]
    for key in minions[:60]:                      # the lane's recent cost: 5 ms a request
        queue.push(Lane.SESSION, key, "first", 0.0)
    while (taken := queue.pop(0.0, 4, NEVER)) is not None:
        queue.done(taken, 0.005, 0.0)
    for key in minions:
        queue.push(Lane.SESSION, key, "pillar", 0.0)
    for i in range(5):
        queue.push(Lane.AUTH, ("address", f"10.0.0.{i}"), f"hello{i}", 0.0)
    assert queue.backlog_s(Lane.SESSION, 5) > 1.9 and not queue.admitting(5)
    served = []
    while (taken := queue.pop(0.0, 4, NEVER)) is not None:
        served.append((taken.item, queue.waiting()[Lane.SESSION]))
        queue.done(taken, 0.005, 0.0)
    first_hello = next(i for i, (item, _) in enumerate(served) if item.startswith("hello"))
    assert 990 <= first_hello <= 1010, first_hello     # 1,000 requests of 5 ms left for 5 workers: 1 s
    assert sum(item.startswith("hello") for item, _ in served) == 5


def test_hellos_held_back_are_expired_without_waiting_for_their_turn() -> None:
    queue: FairQueue[str] = FairQueue()
    for i in range(3):
        queue.push(Lane.AUTH, ("address", f"10.0.0.{i}"), f"old{i}", 0.0)
    queue.push(Lane.AUTH, ("address", "10.0.0.0"), "young", 2.5)
    queue.push(Lane.SESSION, ("minion", "m"), "sealed", 0.0)
    expired: list[str] = []
    assert queue.expire(Lane.AUTH, 3.5, lambda lane, item: expired.append(item)) == 3
    assert sorted(expired) == ["old0", "old1", "old2"]
    assert queue.waiting() == {**dict.fromkeys(queue.waiting(), 0), Lane.AUTH: 1, Lane.SESSION: 1}
    taken = [queue.pop(3.5, 1, NEVER), queue.pop(3.5, 1, NEVER)]
    assert sorted(t.item for t in taken if t is not None) == ["sealed", "young"]


def test_a_hello_goes_rather_than_a_worker_idling_behind_blocked_requests() -> None:
    """Admission holds hellos back only while the minions' requests can go: queued requests of
    flows that leave their replies unread (blocked) do not keep a worker idle and hellos out; and
    requests that never ran (their connection gone) do not move the lane's cost."""
    queue: FairQueue[str] = FairQueue(FairLimits(admission_backlog_s=1.0))
    for i in range(60):
        queue.push(Lane.SESSION, ("minion", f"w{i}"), "first", 0.0)
    while (taken := queue.pop(0.0, 4, NEVER)) is not None:
        queue.done(taken, 0.005, 0.0)
    for i in range(2000):
        queue.push(Lane.SESSION, ("minion", f"m{i}"), "pillar", 0.0)
    queue.push(Lane.AUTH, ("address", "10.0.0.1"), "hello", 0.0)
    assert not queue.admitting(5)
    deaf = lambda key: key[0] == "minion"  # noqa: E731 - every minion's flow is blocked
    taken = queue.pop(0.0, 4, NEVER, deaf)
    assert taken is not None and taken.item == "hello"
    queue.done(taken, 0.01, 0.0)
    cost = queue.lane_cost[Lane.SESSION]
    gone = queue.pop(0.0, 4, NEVER)
    assert gone is not None and gone.item == "pillar"
    queue.done(gone, 0.0, 0.0, ran=False)
    assert queue.lane_cost[Lane.SESSION] == cost
