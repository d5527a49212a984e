"""The attack guard itself: each of its checks fails when its rule is broken (so a passing
attack means something)."""

from __future__ import annotations

import pytest

from tests.security.guard import lab_attack
from tests.security.lab import Lab, publish


def test_guard_catches_a_job(lab: Lab) -> None:
    with pytest.raises(AssertionError, match="jobs published during the attack"):
        with lab_attack(lab):
            publish(lab, "db01", "test.ping")


def test_guard_catches_a_leaked_canary(lab: Lab) -> None:
    needle = lab.canaries.needles["pillar:web01"][0]
    with pytest.raises(AssertionError, match=r"canary leaked: .*pillar:web01"):
        with lab_attack(lab) as atk:
            atk.record("a reply", {"data": [b"x" + needle]})


def test_guard_catches_a_write_outside_the_job_cache(lab: Lab) -> None:
    planted = lab.roots / "states" / "planted.txt"
    try:
        with pytest.raises(AssertionError, match="planted.txt"):
            with lab_attack(lab):
                planted.write_text("x")
    finally:
        planted.unlink(missing_ok=True)


def test_guard_catches_a_missing_refusal_log_line(lab: Lab) -> None:
    with pytest.raises(AssertionError, match="did not log a refusal"):
        with lab_attack(lab, logs=[("master", r"this line is never logged")]):
            pass
