"""A minion whose key is rejected retries slowly: after its reconnect backoff, never sooner than
``acceptance_wait_time``, even when recon_default/recon_max are tiny (they are milliseconds, as in
Salt: a config that meant seconds, recon_default 1.0 and recon_max 2.0, made a rejected minion
send about 60 hellos a second to its master)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import write_trees


def test_a_rejected_minion_waits_acceptance_wait_time_between_hellos(tmp_path: Path) -> None:
    write_trees(tmp_path)
    cl = Cluster(tmp_path)
    # every refusal logged (refusal_log_interval 0), so that the log shows each hello's answer
    cl.add_minion("rej", recon_default=1.0, recon_max=2.0, recon_randomize=False, acceptance_wait_time=0.5,
                  refusal_log_interval=0)
    try:
        cl.start_master()
        cl.start_minions()
        wait_for(lambda: "rej" in cl.keys()["minions_pre"], 30, what="rej's key pending")
        assert cl.key("-r", "rej", "-y").returncode == 0
        log = cl.minions["rej"].log_path
        wait_for(lambda: "master answered rejected" in log.read_text(), 15, what="rej told it is rejected")
        time.sleep(3.0)
        told = [line for line in log.read_text().splitlines() if "master answered rejected" in line]
    finally:
        cl.stop()
    stamps = [time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000
              for m in (re.match(r"(\S+ \S+),(\d+)", line) for line in told) if m]
    gaps = [round(b - a, 3) for a, b in zip(stamps, stamps[1:], strict=False)]
    assert 3 <= len(stamps) <= 12, gaps        # about one hello per 0.5 s over 3 s, not 60 a second
    # the first announcement of the master's boot the minion sees cuts one wait short (docs/protocol.md)
    assert sorted(gaps)[1] >= 0.45, gaps
