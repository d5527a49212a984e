"""The CLI against a real master and five real minions (issue 18): salt's --batch (a count and a
percentage: at most that many minions run at once, seen from the master's job events), exit
statuses, keyword arguments in the job cache and events, `jobs lookup` of a state run, `jobs
active` without its own query, --hide-timeout, and the bad inputs that need a running master."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator

import pytest
import yaml

from runtime.events import EventListener
from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import write_trees

pytestmark = pytest.mark.slow

MINIONS = ["b1", "b2", "b3", "b4", "b5"]


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("batch")
    write_trees(base)
    (base / "states" / "fail.sls").write_text("broken:\n  test.fail_without_changes: []\n")
    (base / "states" / "ok.sls").write_text("fine:\n  test.succeed_without_changes: []\n")
    cl = Cluster(base)
    for minion_id in MINIONS:
        cl.add_minion(minion_id)
    with cl.running():
        yield cl


class JobEvents:
    """The master's salt/job/ events, recorded in order while a command runs."""

    def __init__(self, cl: Cluster):
        self.listener = EventListener(str(cl.sock_dir), "salt/job/")
        assert self.listener.wait_connected(str(cl.sock_dir), 5.0)
        self.events: list[tuple[str, dict]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.collect, daemon=True)
        self.thread.start()

    def collect(self) -> None:
        while not self.stop.is_set():
            event = self.listener.get(0.1)
            if event is not None:
                self.events.append(event)

    def close(self) -> list[tuple[str, dict]]:
        time.sleep(0.5)   # the last returns' events
        self.stop.set()
        self.thread.join(5)
        self.listener.close()
        return self.events


def most_running_at_once(events: list[tuple[str, dict]], fun: str) -> tuple[int, int, set[str]]:
    """(the most minions running ``fun`` at any time, how many jobs were published, who returned),
    from salt/job/<jid>/new (the minions a job is sent to) and salt/job/<jid>/ret/<id>."""
    running: set[str] = set()
    most = jobs = 0
    returned: set[str] = set()
    for tag, data in events:
        if data.get("fun") != fun:
            continue
        if tag.endswith("/new"):
            jobs += 1
            running |= set(data["minions"])
            most = max(most, len(running))
        elif "/ret/" in tag:
            running.discard(data["id"])
            returned.add(data["id"])
    return most, jobs, returned


@pytest.mark.parametrize("size", ["2", "40%"])
def test_batch_runs_at_most_that_many_minions_at_once(five: Cluster, size: str) -> None:
    recorder = JobEvents(five)
    started = time.monotonic()
    proc = five.run("-b", size, "*", "test.sleep", "1", "--out", "json", timeout=120)
    events = recorder.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    most, jobs, returned = most_running_at_once(events, "test.sleep")
    assert most == 2        # 40% of five minions is two
    assert jobs >= 3        # five minions, two places: at least three publications
    assert returned == set(MINIONS)
    assert time.monotonic() - started >= 3   # three rounds of a one-second sleep at least
    batches = re.findall(r"Executing run on \[(.*?)\]", proc.stdout)
    assert sorted(m.strip(" '") for b in batches for m in b.split(",")) == MINIONS
    assert all(len(b.split(",")) <= 2 for b in batches)


def test_batch_exit_status_is_the_highest_retcode(five: Cluster) -> None:
    failed = five.run("-b", "3", "*", "state.apply", "fail", timeout=120)
    assert failed.returncode == 2, failed.stdout + failed.stderr   # salt -b: a failed state's retcode
    plain = five.run("*", "state.apply", "fail", timeout=120)
    assert plain.returncode == 1 and "Minions returned with non-zero exit code" in plain.stderr
    ok = five.run("-b", "50%", "*", "state.apply", "ok", "--state-output=terse", timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Name: fine - Function: test.succeed_without_changes - Result: Clean" in ok.stdout


def test_failhard_stops_starting_minions(five: Cluster) -> None:
    proc = five.run("-b", "1", "--failhard", "*", "state.apply", "fail", timeout=120)
    assert proc.returncode == 2
    assert len(re.findall(r"Executing run on", proc.stdout)) == 1
    assert "--failhard: b1 returned a non-zero retcode; no more minions are started" in proc.stderr


def test_keyword_arguments_reach_the_job_cache_and_events(five: Cluster) -> None:
    recorder = JobEvents(five)
    proc = five.run("b1", "test.arg", "one", "flag=True", "--async")
    events = recorder.close()
    assert proc.returncode == 0, proc.stderr
    jid = proc.stdout.split()[-1]
    new = [data for tag, data in events if tag == f"salt/job/{jid}/new"]
    assert new and new[0]["arg"] == ["one", {"__kwarg__": True, "flag": True}]
    listed = json.loads(five.saltpan("jobs", "-c", str(five.master_conf), "list", "--out", "json").stdout)
    assert listed[jid]["Arguments"] == ["one", {"__kwarg__": True, "flag": True}]


def test_jobs_lookup_of_a_state_run_is_a_highstate(five: Cluster) -> None:
    proc = five.run("b2", "state.apply", "ok", "--async")
    jid = proc.stdout.split()[-1]
    lookup = ["jobs", "-c", str(five.master_conf), "lookup", jid]
    wait_for(lambda: "Summary for b2" in five.saltpan(*lookup).stdout, 30, what="the state run's return")
    shown = five.saltpan(*lookup, "--no-color").stdout
    assert "          ID: fine" in shown and "Succeeded: 1" in shown
    assert json.loads(five.saltpan(*lookup, "--out", "json").stdout)["b2"]


def test_jobs_active_leaves_out_its_own_query(five: Cluster) -> None:
    proc = five.run("b3", "test.sleep", "20", "--async")   # long enough for a loaded machine's two CLI starts
    jid = proc.stdout.split()[-1]
    active = json.loads(five.saltpan("jobs", "-c", str(five.master_conf), "active", "--out", "json").stdout)
    assert list(active) == [jid]
    assert active[jid]["Function"] == "test.sleep" and active[jid]["Running"] == [{"b3": active[jid]["Running"][0]["b3"]}]


def test_state_output_of_the_master_config(five: Cluster) -> None:
    """salt reads state_output from the master's config; --state-output wins over it."""
    original = five.master_conf.read_text()
    five.master_conf.write_text(yaml.safe_dump({**yaml.safe_load(original), "state_output": "terse"}))
    try:
        terse = five.run("b1", "state.apply", "ok", "--no-color")
        full = five.run("b1", "state.apply", "ok", "--state-output", "full", "--no-color")
    finally:
        five.master_conf.write_text(original)
    assert terse.returncode == 0 and full.returncode == 0, terse.stdout + terse.stderr + full.stderr
    assert "  Name: fine - Function: test.succeed_without_changes - Result: Clean" in terse.stdout
    assert "          ID: fine" not in terse.stdout
    assert "          ID: fine" in full.stdout


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["-C", "G@role:web and (", "test.ping"], 2, "saltpan run: the master refused:"),
    (["nosuch*", "test.ping"], 2, "No minions matched the target"),
    (["b01", "test.ping"], 2, "No minions matched the target. No command was sent, no jid was assigned. "
                              "(no_minions) (did you mean 'b1'?)"),
    (["-L", "x1,x2", "test.ping"], 2, "(no_minions); 5 minions are accepted (saltpan key -L lists them)"),
    (["b1", "test.pong"], 1, "'test.pong' is not available"),
    (["b1", "state.apply", "test=maybe"], 2, "test='maybe' is not a boolean"),
    (["b1", "test.ping", "--bacth", "2"], 2, "no such option: --bacth (did you mean '--batch'?)"),
])
def test_bad_input_with_a_running_master(five: Cluster, argv: list[str], code: int, says: str) -> None:
    proc = five.run(*argv, "--no-color")
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert says in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_minion_that_is_down(five: Cluster) -> None:
    """Last (it stops b5): --hide-timeout leaves it out, a batch names it and sends it nothing."""
    five.minions["b5"].stop()
    shown = five.run("*", "test.ping", "-t", "2", "--gather-job-timeout", "1")
    assert shown.returncode == 1 and "b5" in shown.stderr and "did not return" in shown.stderr
    hidden = five.run("*", "test.ping", "-t", "2", "--gather-job-timeout", "1", "--hide-timeout")
    assert hidden.returncode == 0, hidden.stdout + hidden.stderr
    assert "b5" not in hidden.stdout + hidden.stderr
    batch = five.run("-b", "2", "*", "test.ping", "-t", "2", "--gather-job-timeout", "1")
    assert "Minion b5 did not respond. No job will be sent." in batch.stdout
    assert batch.returncode == 1   # a targeted minion got nothing
