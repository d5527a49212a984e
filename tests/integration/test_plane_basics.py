"""Issue 5: jobs through a real master to real minion processes."""

from __future__ import annotations

import json
import signal
import time

from tests.integration.cluster import Cluster, wait_for


def test_ping_all(cluster: Cluster) -> None:
    assert cluster.run_json("*", "test.ping") == {"web01": True, "web02": True, "db01": True}


def test_cmd_run(cluster: Cluster) -> None:
    data = cluster.run_json("*", "cmd.run", "echo hello-$((1+1))")
    assert data == {"web01": "hello-2", "web02": "hello-2", "db01": "hello-2"}


def test_targeting(cluster: Cluster) -> None:
    assert set(cluster.run_json("web*", "test.ping")) == {"web01", "web02"}
    assert set(cluster.run_json("-L", "web01,db01", "test.ping")) == {"web01", "db01"}
    assert set(cluster.run_json("-G", "role:db", "test.ping")) == {"db01"}
    assert set(cluster.run_json("-E", "^web0[12]$", "test.ping")) == {"web01", "web02"}
    assert set(cluster.run_json("-C", "G@os:Debian and not web02", "test.ping")) == {"web01"}
    assert set(cluster.run_json("-C", "( G@role:db or web02 ) and not G@os:Debian", "test.ping")) == {"db01"}


def test_no_match_is_refused(cluster: Cluster) -> None:
    proc = cluster.run("nosuchminion*", "test.ping")
    assert proc.returncode == 2
    assert "No minions matched the target" in proc.stderr


def test_job_cache_and_events(cluster: Cluster) -> None:
    proc = cluster.saltpan("event", "-c", str(cluster.master_conf), "listen", "--tag", "salt/job/", "--count", "4",
                           "--timeout", "1", "--out", "json")
    assert proc.returncode == 0
    data = cluster.run_json("-L", "web01", "test.echo", "cached")
    assert data == {"web01": "cached"}
    listed = cluster.saltpan("jobs", "-c", str(cluster.master_conf), "list", "--limit", "1", "--out", "json")
    jid = next(iter(json.loads(listed.stdout)))
    looked = cluster.saltpan("jobs", "-c", str(cluster.master_conf), "lookup", jid, "--out", "json")
    assert json.loads(looked.stdout) == {"web01": "cached"}


def test_stopped_minion_is_named(cluster: Cluster) -> None:
    cluster.minions["db01"].signal(signal.SIGSTOP)
    try:
        proc = cluster.run("*", "test.ping", "--timeout", "1.5", timeout=30)
        assert proc.returncode == 1
        assert "db01" in proc.stderr
        assert "Minion did not return" in proc.stdout
    finally:
        cluster.minions["db01"].signal(signal.SIGCONT)
    cluster.wait_ping(["db01"])


def test_killed_worker_is_restarted(cluster: Cluster) -> None:
    import subprocess

    out = subprocess.run(["pgrep", "-f", "-P", str(cluster.master.proc.pid)], capture_output=True, text=True)
    children = [int(p) for p in out.stdout.split()]
    assert children, "the master has child processes"
    for pid in children[:2]:
        try:
            import os

            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)
    wait_for(lambda: cluster.run_json("*", "test.ping", "--timeout", "3") == {"web01": True, "web02": True,
                                                                               "db01": True},
             30, interval=0.5, what="ping after killing master children")
    assert "restarting" in cluster.master.log()


def test_state_apply_through_master(cluster: Cluster) -> None:
    data = cluster.run_json("web01", "state.apply", "--timeout", "30", timeout=90)
    results = data["web01"]
    assert all(r["result"] is True for r in results.values()), results
    conf = cluster.base / "sandbox-web01" / "app" / "app.conf"
    assert conf.read_text() == "port=8080 id=web01\n"
    again = cluster.run_json("web01", "state.apply", "--timeout", "30", timeout=90)["web01"]
    assert not any(r["changes"] for r in again.values())
