"""`saltpan swarm` beyond one process's open-files limit: it forks into slices of the ids, every
minion answers, and SIGTERM to the swarm stops every process (issue 20: 10,000 minions)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

import yaml

from runtime.minion.swarm import FDS_PER_MINION, FDS_SPARE
from tests.integration.cluster import REPO, Cluster, children_of, wait_for


def test_swarm_forks_under_a_low_open_files_limit(tmp_path) -> None:
    cluster = Cluster(tmp_path, master_opts={"auto_accept": True})
    (tmp_path / "pillar").mkdir()
    (tmp_path / "states").mkdir()
    conf = tmp_path / "swarm.yaml"
    conf.write_text(yaml.safe_dump({
        "master": "127.0.0.1", "master_port": cluster.ret_port, "publish_port": cluster.publish_port,
        "root_dir": str(tmp_path / "swarmroot"), "log_file": str(tmp_path / "swarm.log"), "log_level": "info",
        "acceptance_wait_time": 0.3, "auth_timeout": 2.0, "request_timeout": 3.0}))
    limit = FDS_SPARE + FDS_PER_MINION * 3 + 4   # 3 minions a process (the interpreter's own files fit in the spare)

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    ids = [f"sw-{i:04d}" for i in range(7)]
    swarm = None
    try:
        cluster.start_master()
        swarm = subprocess.Popen([sys.executable, "-m", "runtime", "swarm", "-c", str(conf), "--count", "7",
                                  "--prefix", "sw-"], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=low_limit,
                                 start_new_session=True)
        wait_for(lambda: len(children_of(swarm.pid)) == 3, 30, what="3 swarm processes")
        wait_for(lambda: all(cluster.run_json("*", "test.ping", "--timeout", "3").get(m) is True for m in ids),
                 90, interval=0.5, what="test.ping from every swarm minion")
        children = list(children_of(swarm.pid))
        swarm.send_signal(signal.SIGTERM)
        assert swarm.wait(60) == 0
        time.sleep(0.2)
        assert not [pid for pid in children if os.path.exists(f"/proc/{pid}")]
    finally:
        if swarm is not None and swarm.poll() is None:
            os.killpg(swarm.pid, signal.SIGKILL)
            swarm.wait(5)
        cluster.stop()
