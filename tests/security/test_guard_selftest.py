"""The attack guard itself: each of its checks fails when its rule is broken (so a passing
attack means something)."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.integration.cluster import wait_for
from tests.security.clients import hold_tcp
from tests.security.guard import MAX_FD_GROWTH, lab_attack
from tests.security.lab import PENDING, Lab, proc_stat, publish


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


def test_guard_catches_a_changed_key_store(lab: Lab) -> None:
    """A key file appears during the attack (allowed as a write, so check 4 stays quiet and the
    key store check is the one that fails); removed afterwards so later attacks see the original
    store."""
    pki = Path(lab.opts["pki_dir"])
    planted = pki / "minions_pre" / "selftest-planted"
    relative = str(planted.relative_to(lab.base))
    try:
        with pytest.raises(AssertionError, match="the key store changed"):
            with lab_attack(lab, allowed_writes=[relative]):
                planted.write_bytes((pki / "minions_pre" / PENDING).read_bytes())
    finally:
        planted.unlink(missing_ok=True)
    assert "selftest-planted" not in lab.key_store()


def test_guard_catches_a_refusal_logged_beyond_the_rate_limit(lab: Lab) -> None:
    """The refusal is logged far more often than once per process per refusal_log_interval.
    Later attacks read only the log lines written after they begin (offsets taken in begin), and
    no pattern of theirs matches this line."""
    master_log = next(p for p in lab.log_files() if p.name == "master.log")
    line = "selftest: refused a request from 127.0.0.99 (selftest_flood)\n"
    with pytest.raises(AssertionError, match=r"master logged 200 lines matching .*rate limit allows \d+"):
        with lab_attack(lab, logs=[("master", r"refused a request from 127\.0\.0\.99 \(selftest_flood\)")]):
            with open(master_log, "a", encoding="utf-8") as fh:   # O_APPEND, as the master's handler
                fh.write(line * 200)


def test_guard_catches_a_master_process_that_died(lab: Lab) -> None:
    """Maintenance is stopped during the attack; the master restarts it under a new pid, which
    the guard must see as a death.  Maintenance serves no request, so the legit pings (check 1)
    go on working and the process check is the one that fails (a killed MWorker could take an
    in-flight ping with it)."""
    old = _maintenance_pid(lab)
    with pytest.raises(AssertionError, match=rf"master processes died during the attack: \{{{old}: 'Maintenance'\}}"):
        with lab_attack(lab):
            os.kill(old, signal.SIGTERM)
            # gone once the master reaps it (a zombie is still its child)
            wait_for(lambda: old not in lab.master_processes(), 10, what=f"Maintenance (pid {old}) to exit")
    # the master restarted it: the lab is whole again for the attacks that follow
    wait_for(lambda: _maintenance_pid(lab, missing_ok=True) not in (None, old), 10, what="Maintenance restarted")


def test_guard_catches_file_descriptors_held_after_the_attack(lab: Lab) -> None:
    """MAX_FD_GROWTH + 16 connections to the ret port, opened during the attack and still open
    when it is verified: the ReqServer holds more new descriptors than MAX_FD_GROWTH allows."""
    req_server = next(pid for pid, name in lab.master_processes().items() if name == "ReqServer")
    fds_before = _fds(req_server)
    held: list[socket.socket] = []
    try:
        with pytest.raises(AssertionError, match=r"ReqServer holds \d+ more file descriptors"):
            with lab_attack(lab):
                held = hold_tcp(lab.cl.ret_port, [b""], count=MAX_FD_GROWTH + 16)
    finally:
        for sock in held:
            sock.close()
    wait_for(lambda: _fds(req_server) <= fds_before + 4, 10, what="ReqServer to release the connections")


def test_guard_catches_a_failed_legit_ping(lab: Lab) -> None:
    """web01 is stopped (SIGSTOP) until a legit ping of the attack has failed, then resumed.
    Before returning, web01 must answer a fresh ping: the publications queued while it was
    stopped are then behind it, so no later attack sees web01 run this test's pings."""
    web01 = lab.cl.minions["web01"]
    try:
        with pytest.raises(AssertionError, match="legit test.ping failed or was slow during the attack"):
            with lab_attack(lab, max_ping_s=1.0) as atk:
                web01.signal(signal.SIGSTOP)
                wait_for(lambda: any(not p.ok for p in atk.pings), 10, what="a ping to fail")
                web01.signal(signal.SIGCONT)
    finally:
        web01.signal(signal.SIGCONT)
    wait_for(lambda: lab.ping("web01", timeout=3).ok, 20, what="web01 to answer a ping again")


def _maintenance_pid(lab: Lab, missing_ok: bool = False) -> int | None:
    found = [pid for pid, name in lab.master_processes().items() if name == "Maintenance"]
    if missing_ok and not found:
        return None
    assert len(found) == 1, found
    return found[0]


def _fds(pid: int) -> int:
    stat = proc_stat(pid)
    assert stat is not None, f"master process {pid} is gone"
    return stat[1]


def test_guard_catches_an_honest_minion_left_unanswered(lab: Lab) -> None:
    """Both MWorkers are stopped (SIGSTOP) for longer than the honest minion waits for a reply:
    its request fails, and the guard says so (pings, given time enough, still pass)."""
    workers = [pid for pid, name in lab.master_processes().items() if name.startswith("MWorker")]
    try:
        with pytest.raises(AssertionError, match="the honest minion's requests failed during the attack"):
            with lab_attack(lab, max_ping_s=20.0) as atk:
                for pid in workers:
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(6.5)
                for pid in workers:
                    os.kill(pid, signal.SIGCONT)
                wait_for(lambda: atk.probe.result.failures, 10, what="the honest minion's request to fail")
    finally:
        for pid in workers:
            os.kill(pid, signal.SIGCONT)
    wait_for(lambda: lab.ping("web01", timeout=3).ok, 20, what="web01 to answer a ping again")
