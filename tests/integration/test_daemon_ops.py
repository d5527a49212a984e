"""Issue 5, operations: files by role, pid files, log files and levels, socket and key modes,
`saltpan event listen`, `saltpan minions --status`, job cache pruning, and a clean exit (status 0)
on SIGTERM for master and minion.  One master and one minion; the minion uses the default
pid file and log file locations (under its root_dir), the master the default pid file.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import REPO, Cluster, wait_for
from tests.integration.conftest import write_trees

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("ops")
    write_trees(base)
    cl = Cluster(base, master_opts={"keep_jobs_seconds": 4, "loop_interval": 1})
    path = cl.add_minion("ops01")
    conf = yaml.safe_load(path.read_text())
    del conf["log_file"]  # the default: <root_dir>/var/log/saltpan/minion
    path.write_text(yaml.safe_dump(conf))
    # systemd's notify socket, as Type=notify units have it
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(base / "notify"))
    cl.master.env["NOTIFY_SOCKET"] = cl.minions["ops01"].env["NOTIFY_SOCKET"] = str(base / "notify")
    cl.notify = notify  # type: ignore[attr-defined]
    try:
        with cl.running():
            yield cl
    finally:
        notify.close()


def test_both_daemons_tell_systemd_they_are_ready(ops: Cluster) -> None:
    ops.notify.settimeout(5)  # type: ignore[attr-defined]
    messages = {ops.notify.recv(1024).decode() for _ in range(2)}  # type: ignore[attr-defined]
    assert {m.split("\n")[0] for m in messages} == {"READY=1"}
    assert any("STATUS=minion ops01" in m for m in messages)
    assert any(f"STATUS=serving on ports {ops.publish_port}/{ops.ret_port}" in m for m in messages)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def master_root(cl: Cluster) -> Path:
    return Path(cl.master_opts["root_dir"])


def minion_root(cl: Cluster) -> Path:
    return cl.base / "ops01"


def test_pid_and_log_files_by_role(ops: Cluster) -> None:
    master_pid = master_root(ops) / "var/run/saltpan-master.pid"
    minion_pid = minion_root(ops) / "var/run/saltpan-minion.pid"
    assert int(master_pid.read_text()) == ops.master.proc.pid
    assert int(minion_pid.read_text()) == ops.minions["ops01"].proc.pid
    assert "master started" in (ops.base / "master.log").read_text()
    minion_log = minion_root(ops) / "var/log/saltpan/minion"
    assert "minion ops01 starting" in minion_log.read_text()
    assert mode(minion_log) == 0o600


def test_sockets_keys_and_caches_are_private(ops: Cluster) -> None:
    sock_dir = ops.sock_dir
    assert mode(sock_dir) == 0o700
    ipc = sorted(p.name for p in sock_dir.glob("*.ipc"))
    assert ipc == ["master_event_pub.ipc", "master_event_pull.ipc", "publish_pull.ipc", "workers.ipc"]
    for path in sock_dir.glob("*.ipc"):
        assert stat.S_ISSOCK(path.stat().st_mode) and mode(path) == 0o600, path
    assert mode(sock_dir / "sessions.sqlite") == 0o600
    pki = master_root(ops) / "etc/saltpan/pki/master"
    assert mode(pki) == 0o700 and mode(pki / "minions") == 0o700
    assert mode(pki / "master.pem") == 0o600 and mode(pki / "minions/ops01") == 0o600
    cachedir = master_root(ops) / "var/cache/saltpan/master"
    assert mode(cachedir) == 0o700 and mode(cachedir / "jobs.sqlite") == 0o600
    minion_pki = minion_root(ops) / "etc/saltpan/pki/minion"
    assert mode(minion_pki) == 0o700
    assert mode(minion_pki / "minion.pem") == 0o600 and mode(minion_pki / "minion_master.pub") == 0o600


def test_a_second_master_on_the_same_files_refuses_to_start(ops: Cluster) -> None:
    proc = ops.saltpan("master", "-c", str(ops.master_conf), timeout=30)
    assert proc.returncode == 2
    assert "saltpan master: cannot bind" in proc.stderr or "already running" in proc.stderr
    assert int((master_root(ops) / "var/run/saltpan-master.pid").read_text()) == ops.master.proc.pid
    assert ops.run_json("*", "test.ping") == {"ops01": True}


def test_event_listen_shows_job_tags(ops: Cluster) -> None:
    listen = subprocess.Popen([sys.executable, "-m", "runtime", "event", "-c", str(ops.master_conf), "listen",
                               "--tag", "salt/job/", "--count", "2", "--timeout", "20"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        time.sleep(1.0)  # the listener subscribes before the job is published
        proc = ops.run("ops01", "test.echo", "evented", "--async")
        jid = proc.stdout.split()[-1]
        out, _ = listen.communicate(timeout=30)
    finally:
        if listen.poll() is None:
            listen.kill()
            listen.wait()
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == [f"salt/job/{jid}/new", f"salt/job/{jid}/ret/ops01"]
    new, ret = (json.loads(line.split("\t", 1)[1]) for line in lines)
    assert (new["fun"], new["minions"], new["arg"]) == ("test.echo", ["ops01"], ["evented"])
    assert (ret["id"], ret["return"], ret["success"], ret["retcode"]) == ("ops01", "evented", True, 0)


def test_minions_status_follows_heartbeats(ops: Cluster) -> None:
    def status() -> dict:
        return json.loads(ops.saltpan("minions", "-c", str(ops.master_conf), "--status", "--out", "json").stdout)

    wait_for(lambda: status() == {"up": ["ops01"], "down": [], "pending": []}, 10, what="ops01 up")
    assert ops.saltpan("minions", "-c", str(ops.master_conf), "--status").stdout == (
        "up:\n    - ops01\ndown:\npending:\n")
    ops.minions["ops01"].signal(signal.SIGSTOP)
    try:
        wait_for(lambda: status()["down"] == ["ops01"], 15, what="ops01 down")
    finally:
        ops.minions["ops01"].signal(signal.SIGCONT)
    wait_for(lambda: status()["up"] == ["ops01"], 15, what="ops01 up again")


def test_job_cache_pruned_after_keep_jobs_seconds(ops: Cluster) -> None:
    jid = ops.run("ops01", "test.echo", "old", "--async").stdout.split()[-1]

    def lookup(job: str) -> subprocess.CompletedProcess:
        return ops.saltpan("jobs", "-c", str(ops.master_conf), "lookup", job, "--out", "json")

    wait_for(lambda: lookup(jid).returncode == 0 and "old" in lookup(jid).stdout, 10, what="the return")
    wait_for(lambda: lookup(jid).returncode != 0, 15, what="the job to be pruned")
    assert f"no job {jid} in the job cache" in lookup(jid).stderr
    listed = json.loads(ops.saltpan("jobs", "-c", str(ops.master_conf), "list", "--out", "json").stdout)
    assert jid not in listed


def test_log_level_on_the_command_line(ops: Cluster) -> None:
    minion = ops.minions["ops01"]
    minion.stop()
    assert minion.proc.returncode == 0
    minion.argv = [*minion.argv, "-l", "debug"]
    minion.start()
    ops.wait_ping(["ops01"])
    text = (minion_root(ops) / "var/log/saltpan/minion").read_text()
    assert "[DEBUG   ]" in text.split("minion ops01 starting")[-1]


def test_sigterm_stops_minion_and_master_cleanly(ops: Cluster) -> None:
    minion = ops.minions["ops01"].proc
    # a job still running when the minion is told to stop does not hold the stop up
    jid = ops.run("ops01", "test.sleep", "60", "--async").stdout.split()[-1]
    wait_for(lambda: ops.run_json("ops01", "saltutil.find_job", jid).get("ops01"), 10, what="the sleep running")
    started = time.monotonic()
    os.kill(minion.pid, signal.SIGTERM)  # the process only, as `kill PID` or systemd's main-process signal
    assert minion.wait(10) == 0
    assert time.monotonic() - started < 5
    assert not (minion_root(ops) / "var/run/saltpan-minion.pid").exists()
    log = (minion_root(ops) / "var/log/saltpan/minion").read_text()
    assert f"minion ops01 stopped; abandoned 1 running job(s): test.sleep {jid}" in log
    children = ops.master_children()
    assert len(children) == 2 + 4  # two MWorkers, Publisher, EventPublisher, ReqServer, Maintenance
    os.kill(ops.master.proc.pid, signal.SIGTERM)
    assert ops.master.proc.wait(15) == 0
    for pid in children.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not (master_root(ops) / "var/run/saltpan-master.pid").exists()
    assert (ops.base / "master.log").read_text().rstrip().endswith("master stopped")
