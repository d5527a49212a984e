"""Issue 5: jobs through a real master to real minion processes."""

from __future__ import annotations

import json
import os
import signal
import time

from tests.integration.cluster import Cluster, wait_for


def test_ping_all(cluster: Cluster) -> None:
    assert cluster.run_json("*", "test.ping") == {"web01": True, "web02": True, "db01": True}


def test_cmd_run(cluster: Cluster) -> None:
    data = cluster.run_json("*", "cmd.run", "echo hello-$((1+1))")
    assert data == {"web01": "hello-2", "web02": "hello-2", "db01": "hello-2"}


TARGETS = [
    (["web*"], {"web01", "web02"}),
    (["-L", "web01,db01"], {"web01", "db01"}),
    (["-G", "role:db"], {"db01"}),
    (["-P", "os:Deb.*"], {"web01", "web02"}),
    (["-I", "app:owner:web02"], {"web02"}),
    (["-E", "^web0[12]$"], {"web01", "web02"}),
    (["-C", "G@os:Debian and not web02"], {"web01"}),
    (["-C", "( G@role:db or web02 ) and not G@os:Debian"], {"db01"}),
]


def test_targeting(cluster: Cluster) -> None:
    """Each target returns from exactly its minions, and no other minion ran the job: every run
    appends the id of each minion that ran it to a file of its own."""
    for index, (target, expected) in enumerate(TARGETS):
        markers = cluster.base / f"targeted-{index}"
        data = cluster.run_json(*target, "cmd.run", f'echo "$SALTPAN_TEST_ID" >> {markers}; echo ran')
        assert data == {m: "ran" for m in expected}, target
        time.sleep(0.3)  # a wrongly targeted minion would have written by now (its return is refused)
        assert sorted(markers.read_text().split()) == sorted(expected), target


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


def test_one_client_runs_jobs_back_to_back_on_one_connection(cluster: Cluster) -> None:
    """LocalClient keeps its request connection and its bus subscription from one job to the next
    (as Salt's keeps its event subscription); each job still gets exactly its own returns, also
    when another client's job filled the bus while this one was idle."""
    from runtime.client import LocalClient

    minions = ("db01", "web01", "web02")
    with LocalClient(cluster.opts()) as client:
        for n in range(4):
            result = client.cmd("*", "test.echo", [f"round {n}"], timeout=15)
            assert {m: r["return"] for m, r in result.returns.items()} == {m: f"round {n}" for m in minions}
            assert not result.missing
            with LocalClient(cluster.opts()) as other:   # events this client's kept subscription queues
                other.cmd("*", "test.echo", ["someone else"], timeout=15)
        assert client._requests is not None and client._requests.reconnects == 0
        assert client._idle_listener is not None
    assert client._requests is None and client._idle_listener is None


def test_stopped_minion_is_named(cluster: Cluster) -> None:
    cluster.minions["db01"].signal(signal.SIGSTOP)
    try:
        proc = cluster.run("*", "test.ping", "--timeout", "1.5", "--gather-job-timeout", "1", timeout=30)
        assert proc.returncode == 1
        assert "db01" in proc.stderr
        assert "Minion did not return" in proc.stdout
    finally:
        cluster.minions["db01"].signal(signal.SIGCONT)
    cluster.wait_ping(["db01"])


def test_killed_workers_are_restarted(cluster: Cluster) -> None:
    """SIGKILL every MWorker: no request can be answered until the process manager has
    started new ones, so the job that succeeds afterwards proves the restart."""
    before = cluster.master_children()
    workers = {name: pid for name, pid in before.items() if name.startswith("MWorker-")}
    assert sorted(workers) == ["MWorker-0", "MWorker-1"], before
    assert {"Publisher", "EventPublisher", "ReqServer", "Maintenance"} <= set(before)
    for pid in workers.values():
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: {n: p for n, p in cluster.master_children().items() if n.startswith("MWorker-")}.keys()
             == workers.keys() and not set(cluster.master_children().values()) & set(workers.values()),
             10, what="new MWorker processes")
    assert cluster.run_json("*", "test.ping", "--timeout", "5") == {"web01": True, "web02": True, "db01": True}
    log = cluster.master.log()
    assert "MWorker-0 (pid" in log and "restarting" in log


def test_state_apply_through_master(cluster: Cluster) -> None:
    data = cluster.run_json("web01", "state.apply", "--timeout", "30", timeout=90)
    results = data["web01"]
    assert all(r["result"] is True for r in results.values()), results
    conf = cluster.base / "sandbox-web01" / "app" / "app.conf"
    assert conf.read_text() == "port=8080 id=web01\n"
    again = cluster.run_json("web01", "state.apply", "--timeout", "30", timeout=90)["web01"]
    assert not any(r["changes"] for r in again.values())
