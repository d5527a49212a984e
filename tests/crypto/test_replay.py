"""Replay windows: the pure rule, the in-process guard, and the store shared by worker processes."""

from __future__ import annotations

import multiprocessing

import pytest

from runtime import codec
from runtime.crypt.channel import ServerChannel
from runtime.crypt.errors import ReplayRefused
from runtime.crypt.handshake import now_ms
from runtime.crypt.replay import MemoryReplayGuard, check_fresh, window_admit
from runtime.master.store.sqlite_sessions import SQLiteSessionStore


def admit_all(counters, size=64):
    hi = bits = 0
    accepted = []
    for counter in counters:
        try:
            hi, bits = window_admit(hi, bits, counter, size)
            accepted.append(counter)
        except ReplayRefused as exc:
            accepted.append(exc.reason)
    return accepted


def test_window_rule():
    assert admit_all([1, 2, 3]) == [1, 2, 3]
    assert admit_all([3, 1, 2, 2, 3]) == [3, 1, 2, "replayed", "replayed"]
    assert admit_all([0, -1]) == ["too_old", "too_old"]
    assert admit_all([100, 37, 36, 37]) == [100, 37, "too_old", "replayed"]
    assert admit_all([1, 1000, 1]) == [1, 1000, "too_old"]
    assert admit_all([5, 70, 7, 6, 5]) == [5, 70, 7, "too_old", "too_old"]


def test_window_bits_stay_bounded():
    hi = bits = 0
    for counter in range(1, 5000, 3):
        hi, bits = window_admit(hi, bits, counter, 128)
    assert bits < (1 << 128)


def test_freshness():
    check_fresh(1000, 1000, 10)
    check_fresh(990, 1000, 10)
    with pytest.raises(ReplayRefused) as err:
        check_fresh(989, 1000, 10)
    assert err.value.reason == "stale"
    with pytest.raises(ReplayRefused) as err:
        check_fresh(1011, 1000, 10)
    assert err.value.reason == "future"


def test_memory_guard_scopes_and_bound():
    guard = MemoryReplayGuard(max_scopes=2)
    now = now_ms()
    guard.admit(b"a", 1, now, now)
    with pytest.raises(ReplayRefused):
        guard.admit(b"a", 1, now, now)
    guard.admit(b"b", 1, now, now)
    guard.admit(b"c", 1, now, now)  # evicts "a"
    assert len(guard._windows) == 2
    with pytest.raises(ReplayRefused):
        guard.admit(b"c", 2, now - 10 * 60_000, now)


def _worker(path, loads, reverse, barrier, results):
    store = SQLiteSessionStore(path)
    server = ServerChannel(store)
    order = list(enumerate(loads))
    if reverse:
        order.reverse()
    barrier.wait(10)
    won = []
    for index, load in order:
        try:
            server.open_request(load)
            won.append(index)
        except ReplayRefused:
            pass
    results.put(won)
    store.close()


@pytest.mark.parametrize("second_reversed", [False, True])
def test_same_messages_to_two_worker_processes_are_processed_once(fleet, second_reversed):
    _, _, client, _ = fleet.accepted("web1")
    loads = [codec.unpack_envelope(client.seal_request({"n": i})[1]).load for i in range(1000)]
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    # same order: the two hit each message at (nearly) the same moment; reversed: they cross
    procs = [ctx.Process(target=_worker, args=(fleet.store.path, loads, reverse, barrier, results))
             for reverse in (False, second_reversed)]
    for proc in procs:
        proc.start()
    won = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(10)
        assert proc.exitcode == 0
    assert sorted(won[0] + won[1]) == list(range(1000))  # each exactly once
    assert not set(won[0]) & set(won[1])
    # (which process wins which message depends on scheduling: under load one may win them all;
    # the property is that every message is processed exactly once)
