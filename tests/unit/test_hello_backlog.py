"""The window a minion refused a hello is told to come back within (runtime/transport_hellos.py):
the minions turned away over the hellos admitted per second, bounded; and the minion's reading of
it from the unsigned refusal (runtime/minion/session.py)."""

from __future__ import annotations

import pytest

from runtime.minion.session import retry_hint
from runtime.transport_hellos import FORGET_S, MAX_RETRY_S, MIN_RETRY_S, RATE_WINDOW_S, HelloBacklog


def peer(i: int) -> bytes:
    return f"127.64.{i // 256}.{i % 256}".encode()


def test_the_window_is_the_minions_turned_away_over_the_rate_admitted() -> None:
    hellos = HelloBacklog(rate_floor=100.0)
    for i in range(2000):
        hellos.refused(peer(i), 0.0)
    assert hellos.retry_s(0.0) == 20.0             # nothing admitted yet: the floor, 100 a second
    for i in range(2000, 3000):                    # 1,000 admitted within the rate window: 200 a second
        hellos.admitted(peer(i), 0.5)
    assert hellos.rate(1.0) == 1000 / RATE_WINDOW_S
    assert hellos.retry_s(1.0) == 10.0
    for i in range(500):                           # a quarter of those turned away got in since
        hellos.admitted(peer(i), 1.5)
    assert hellos.waiting(2.0) == 1500 and hellos.retry_s(2.0) == 5.0     # 1,500 over (1,500 / 5 s)


def test_a_minion_refused_again_is_counted_once_and_the_window_is_bounded() -> None:
    hellos = HelloBacklog(rate_floor=1.0)
    for _ in range(50):
        hellos.refused(peer(7), 0.0)
    assert hellos.waiting(0.0) == 1 and hellos.retry_s(0.0) == MIN_RETRY_S
    for i in range(500):
        hellos.refused(peer(i), 0.0)
    assert hellos.retry_s(0.0) == MAX_RETRY_S


def test_minions_turned_away_long_ago_are_forgotten() -> None:
    hellos = HelloBacklog(rate_floor=10.0)
    for i in range(100):
        hellos.refused(peer(i), 0.0)
    hellos.refused(peer(5), 30.0)                  # came back and was refused again: counted from then
    assert hellos.waiting(FORGET_S - 1) == 100
    assert hellos.waiting(FORGET_S + 1) == 1
    assert hellos.waiting(FORGET_S + 31) == 0


@pytest.mark.parametrize(("refusal", "hint"), [
    ({"reason": "busy", "retry_s": 12.0}, 12.0),
    ({"reason": "busy", "retry_s": 3}, 3.0),
    ({"reason": "busy"}, 0.0),
    ({"reason": "busy", "retry_s": 0}, 0.0),
    ({"reason": "busy", "retry_s": -4.0}, 0.0),
    ({"reason": "busy", "retry_s": MAX_RETRY_S + 1}, 0.0),       # a forged hour: ignored
    ({"reason": "busy", "retry_s": True}, 0.0),
    ({"reason": "busy", "retry_s": "10"}, 0.0),
    ({"reason": "busy", "retry_s": float("nan")}, 0.0),
])
def test_a_minion_takes_only_a_bounded_number_of_seconds_from_a_refusal(refusal: dict, hint: float) -> None:
    assert retry_hint(refusal) == hint
