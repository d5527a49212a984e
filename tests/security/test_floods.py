"""Class 9 floods: an auth flood of new ids and a flood of malformed frames (about 10 s each),
from six loopback addresses at once, while the legit round trip is measured.

``test.ping`` to an accepted minion must answer within 2 s throughout, and the master's memory
(all its processes) must grow by less than 50 MiB.  ``bench/security_floods.py`` runs the same
floods for 60 s and reports the figures in bench/RESULTS.md.
"""

from __future__ import annotations

import os

import pytest

from tests.security.floods import run_flood
from tests.security.lab import MAX_PENDING, Lab

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("SALTPAN_FLOOD_SECONDS", "10"))
MAX_PING_S = 2.0
MAX_RSS_GROWTH_MIB = 50


def flood(lab: Lab, kind: str):
    procs = lab.master_processes()

    def ping() -> tuple[bool, float, str]:
        result = lab.ping("web01", timeout=MAX_PING_S)
        return result.ok, result.seconds, result.error

    report = run_flood(kind, lab.cl.ret_port, SECONDS, ping, lambda: list(lab.master_processes()))
    print(report.summary())
    assert lab.master_processes() == procs, "a master process died or was restarted during the flood"
    assert not report.failures, report.summary()
    assert max(report.latencies) < MAX_PING_S, report.summary()
    assert report.rss_growth_mib < MAX_RSS_GROWTH_MIB, report.summary()
    assert lab.ping("web01").ok and lab.ping("db01").ok
    return report


def test_auth_flood_of_new_ids(lab: Lab) -> None:
    try:
        report = flood(lab, "auth")
        assert report.sent > 1000, report.summary()
        pending = [m for m in lab.keys()["minions_pre"] if m.startswith("flood-")]
        assert 0 < len(pending) <= MAX_PENDING, len(pending)
        assert report.replies.get("pending_full", 0) > 0, report.summary()
    finally:
        lab.cl.key("-d", "flood-*", "-y")


def test_malformed_frame_flood(lab: Lab) -> None:
    report = flood(lab, "malformed")
    assert report.sent > 1000, report.summary()
