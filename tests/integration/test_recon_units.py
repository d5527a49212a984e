"""Salt's reconnect keys in Salt's units: a minion config written for Salt (recon_default: 200,
recon_max: 2000, in milliseconds) brings every minion back within seconds of a master restart."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import yaml

from tests.integration.cluster import Cluster
from tests.integration.conftest import write_trees

IDS = ["r1", "r2", "r3"]


def test_every_minion_answers_within_10s_of_a_master_sigkill_and_restart(tmp_path: Path) -> None:
    write_trees(tmp_path)
    cl = Cluster(tmp_path)
    for minion_id in IDS:
        cl.add_minion(minion_id, recon_default=200, recon_max=2000, recon_randomize=True)
    with cl.running():
        conf = yaml.safe_load(cl.minion_confs["r1"].read_text())
        assert (conf["recon_default"], conf["recon_max"]) == (200, 2000)  # as a Salt minion config says it
        logged = {m: cl.minions[m].log_path.stat().st_size for m in IDS}
        cl.master.signal(signal.SIGKILL)
        assert cl.master.proc is not None
        cl.master.proc.wait(5)
        time.sleep(3.0)  # the minions notice and back off a few times
        cl.start_master()  # counted from the new master's ports accepting connections (its start-up is
        started = time.monotonic()  # not the minions' doing and takes seconds on a loaded machine)
        cl.wait_ping(IDS, timeout=10)
        elapsed = time.monotonic() - started
        print(f"every minion answered test.ping {elapsed:.1f} s after the master restart")
        assert elapsed < 10
        for minion_id in IDS:
            with open(cl.minions[minion_id].log_path, "rb") as fh:
                fh.seek(logged[minion_id])
                outage = fh.read().decode(errors="replace")
            backoffs = [float(b) for b in re.findall(r"reconnecting in [0-9.]+ s \(backoff ([0-9.]+) s", outage)]
            assert backoffs, f"{minion_id} logged no reconnect: {outage[-2000:]}"
            # milliseconds read as milliseconds: 0.2, 0.6, 1.4, 2.0 ... seconds, never above recon_max
            assert backoffs[0] == 0.2 and max(backoffs) <= 2.0, backoffs
