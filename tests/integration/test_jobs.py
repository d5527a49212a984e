"""Issue 5: jobs on real minions — --async, saltutil.running / find_job / kill_job, long jobs,
exit statuses, `saltpan jobs active`.

mp01 runs each job in a forked process (``multiprocessing: True``), so kill_job can stop it;
th01 runs jobs in threads (the default).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import write_trees

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def jobs_cluster(tmp_path_factory: pytest.TempPathFactory, master_store: dict[str, Any]) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("jobs")
    write_trees(base)
    cl = Cluster(base, master_opts=master_store)
    cl.add_minion("mp01", multiprocessing=True)
    cl.add_minion("th01")
    with cl.running():
        yield cl


def run_async(cl: Cluster, *args: str) -> str:
    proc = cl.run(*args, "--async")
    assert proc.returncode == 0, proc.stderr
    found = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert found, proc.stdout
    return found.group(1)


def lookup(cl: Cluster, jid: str) -> dict:
    proc = cl.saltpan("jobs", "-c", str(cl.master_conf), "lookup", jid, "--out", "json")
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_async_prints_the_jid_and_the_job_runs(jobs_cluster: Cluster) -> None:
    jid = run_async(jobs_cluster, "*", "test.echo", "later")
    wait_for(lambda: lookup(jobs_cluster, jid) == {"mp01": "later", "th01": "later"}, 15, what="both returns")
    listed = json.loads(jobs_cluster.saltpan("jobs", "-c", str(jobs_cluster.master_conf), "list", "--out",
                                             "json").stdout)
    assert listed[jid]["Function"] == "test.echo" and listed[jid]["Arguments"] == ["later"]
    assert listed[jid]["Target"] == "*" and listed[jid]["Target-type"] == "glob"
    assert re.fullmatch(r"\d{4}, [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d\.\d{6}", listed[jid]["StartTime"])


def test_running_find_job_and_kill_job_in_a_job_process(jobs_cluster: Cluster) -> None:
    jid = run_async(jobs_cluster, "-L", "mp01", "test.sleep", "30")

    def running() -> list:
        return jobs_cluster.run_json("mp01", "saltutil.running").get("mp01") or []

    jobs = wait_for(lambda: [j for j in running() if j["jid"] == jid], 10, what="the sleep in saltutil.running")
    job = jobs[0]
    assert (job["fun"], job["arg"], job["tgt"], job["tgt_type"]) == ("test.sleep", [30], ["mp01"], "list")
    minion_pid = jobs_cluster.minions["mp01"].proc.pid
    assert job["pid"] != minion_pid and pid_alive(job["pid"])
    assert jobs_cluster.run_json("mp01", "saltutil.find_job", jid)["mp01"]["pid"] == job["pid"]
    active = json.loads(jobs_cluster.saltpan("jobs", "-c", str(jobs_cluster.master_conf), "active", "--out",
                                             "json").stdout)
    assert active[jid]["Function"] == "test.sleep"
    assert active[jid]["Running"] == [{"mp01": job["pid"]}] and active[jid]["Returned"] == []
    killed = jobs_cluster.run_json("mp01", "saltutil.kill_job", jid)
    assert killed == {"mp01": f"Signal 9 sent to job {jid} at pid {job['pid']}"}
    wait_for(lambda: not pid_alive(job["pid"]), 5, what="the job process to die")
    assert jobs_cluster.run_json("mp01", "saltutil.find_job", jid) == {"mp01": {}}
    assert [j for j in running() if j["jid"] == jid] == []
    # the minion reports the kill instead of leaving the job unanswered
    ret = wait_for(lambda: lookup(jobs_cluster, jid).get("mp01"), 10, what="the killed job's return")
    assert "ended without a result" in ret


def test_a_job_in_a_thread_cannot_be_killed(jobs_cluster: Cluster) -> None:
    jid = run_async(jobs_cluster, "-L", "th01", "test.sleep", "3")
    wait_for(lambda: jobs_cluster.run_json("th01", "saltutil.find_job", jid).get("th01"), 5, what="find_job")
    message = jobs_cluster.run_json("th01", "saltutil.kill_job", jid)["th01"]
    assert "runs in a thread and cannot be killed" in message
    wait_for(lambda: lookup(jobs_cluster, jid) == {"th01": True}, 10, what="the sleep to finish")


def test_a_job_longer_than_the_timeout_is_waited_for(jobs_cluster: Cluster) -> None:
    """As salt: when the timeout passes, the client asks the minions (saltutil.find_job) and keeps
    waiting for those still running the job."""
    started = time.monotonic()
    proc = jobs_cluster.run("*", "test.sleep", "4", "--timeout", "1", "--out", "json", "--static")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"mp01": True, "th01": True}
    assert 4 <= time.monotonic() - started < 20


def test_exit_status_follows_the_minions_retcodes(jobs_cluster: Cluster) -> None:
    proc = jobs_cluster.run("*", "cmd.run", "echo out; exit 3")
    assert proc.returncode == 1
    assert "ERROR: Minions returned with non-zero exit code: mp01, th01" in proc.stderr
    assert "mp01:\n    out" in proc.stdout
    data = jobs_cluster.run_json("th01", "cmd.run_all", "exit 4")
    assert data["th01"]["retcode"] == 4
    assert jobs_cluster.run("*", "test.retcode", "0").returncode == 0
    proc = jobs_cluster.run("th01", "test.retcode", "5")
    assert proc.returncode == 1 and "th01" in proc.stderr
    assert jobs_cluster.run("*", "test.ping").returncode == 0
