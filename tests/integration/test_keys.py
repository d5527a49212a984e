"""Issue 5: the key acceptance flow with a real master and four real minions.

Minions start with unknown keys (auto_accept off), so they are pending; the tests then walk
through `saltpan key` as an operator would (-L, -a, -A, -r, -d, -f, -p, with and without -y) and
check salt-key's output shapes, that jobs reach accepted minions, and that pending and rejected
minions never run a job: each job writes a marker file named after the minion that ran it
(``$SALTPAN_TEST_ID``), and the marker of a pending or rejected minion never appears.

The tests in this module run in order on one cluster (each step builds on the key states the
previous one left).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.crypt.identity import load_identity
from tests.integration.cluster import REPO, Cluster, wait_for
from tests.integration.conftest import write_trees

pytestmark = pytest.mark.slow

IDS = ["web01", "web02", "db01", "bad01"]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, master_store: dict[str, Any]) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("keys")
    write_trees(base)
    (base / "markers").mkdir()
    cl = Cluster(base, master_opts=master_store)
    cl.add_minion("web01", {"role": "web"})
    cl.add_minion("web02", {"role": "web"})
    cl.add_minion("db01", {"role": "db"})
    cl.add_minion("bad01", {"role": "web"})
    listener: subprocess.Popen | None = None
    try:
        cl.start_master()
        # every event from before the first minion starts (salt/auth, salt/key, minion_start)
        events = open(base / "events.jsonl", "w")  # noqa: SIM115 - closed with the listener
        listener = subprocess.Popen([sys.executable, "-m", "runtime", "event", "-c", str(cl.master_conf), "listen",
                                     "--out", "json", "--timeout", "170"], stdout=events, stderr=subprocess.STDOUT,
                                    cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), start_new_session=True)
        events.close()
        time.sleep(1.0)
        cl.start_minions()
        cl.listener = listener  # type: ignore[attr-defined]
        yield cl
    finally:
        if listener is not None and listener.poll() is None:
            os.killpg(listener.pid, signal.SIGTERM)
            try:
                listener.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(listener.pid, signal.SIGKILL)
        cl.stop()


def touch_markers(cl: Cluster, tag: str, tgt: str = "*", *extra: str) -> subprocess.CompletedProcess:
    """A job that writes markers/<minion>-<tag> on every minion that runs it."""
    return cl.run(*extra, tgt, "cmd.run", f'touch {cl.base}/markers/"$SALTPAN_TEST_ID"-{tag}', "--timeout", "4")


def markers(cl: Cluster, tag: str) -> set[str]:
    return {p.name[: -len(tag) - 1] for p in (cl.base / "markers").glob(f"*-{tag}")}


def events(cl: Cluster) -> list[dict]:
    path = cl.base / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def test_new_minions_are_pending_and_listed_like_salt_key(keyed: Cluster) -> None:
    wait_for(lambda: keyed.keys()["minions_pre"] == sorted(IDS), 20, what="four pending keys")
    proc = keyed.key("-L")
    assert proc.returncode == 0
    assert proc.stdout == ("Accepted Keys:\nDenied Keys:\nUnaccepted Keys:\nbad01\ndb01\nweb01\nweb02\n"
                           "Rejected Keys:\n")
    assert json.loads(keyed.key("-L", "--out", "json").stdout) == {
        "minions": [], "minions_pre": ["bad01", "db01", "web01", "web02"], "minions_rejected": [],
        "minions_denied": []}
    # nothing is accepted, so nothing can be targeted: the master refuses to publish
    proc = touch_markers(keyed, "pending")
    assert proc.returncode == 2 and "No minions matched the target" in proc.stderr
    # the pending minions keep knocking (acceptance_wait_time): the master fires salt/auth "pend"
    wait_for(lambda: {e["data"]["id"] for e in events(keyed) if e["tag"] == "salt/auth"
                      and e["data"]["act"] == "pend"} == set(IDS), 10, what="salt/auth pend events")


def test_fingerprint_and_public_key_match_the_minion(keyed: Cluster) -> None:
    minion_key = load_identity(str(keyed.base / "web01" / "etc/saltpan/pki/minion"), "minion")
    proc = keyed.key("-f", "web01")
    assert proc.stdout == f"Unaccepted Keys:\nweb01:  {minion_key.fingerprint}\n"
    assert json.loads(keyed.key("-f", "web01", "--out", "json").stdout) == {
        "minions_pre": {"web01": minion_key.fingerprint}}
    proc = keyed.key("-p", "web01")
    pem = minion_key.public_pem().decode().strip()
    assert proc.stdout == f"Unaccepted Keys:\nweb01:  {pem}\n"
    # -F starts with the master's own key: what a minion pins with master_finger
    master_key = load_identity(str(keyed.base / "master" / "etc/saltpan/pki/master"), "master")
    finger_all = keyed.key("-F").stdout.splitlines()
    assert finger_all[:3] == ["Local Keys:", f"master.pub:  {master_key.fingerprint}", "Unaccepted Keys:"]
    assert len(finger_all) == 7


def test_accept_one_key_then_jobs_reach_only_it(keyed: Cluster) -> None:
    proc = keyed.key("-a", "web01", "-y")
    assert proc.returncode == 0
    assert proc.stdout == ("The following keys are going to be accepted:\nUnaccepted Keys:\nweb01\n"
                           "Key for minion web01 accepted.\n")
    keyed.wait_ping(["web01"])
    proc = touch_markers(keyed, "one")
    assert proc.returncode == 0, proc.stderr
    # the three pending minions never run it (give them time to, had they received it)
    time.sleep(1.5)
    assert markers(keyed, "one") == {"web01"}


def test_declining_the_prompt_changes_nothing(keyed: Cluster) -> None:
    proc = subprocess.run([sys.executable, "-m", "runtime", "key", "-c", str(keyed.master_conf), "-a", "web02"],
                          input="n\n", capture_output=True, text=True, timeout=30, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0
    assert proc.stdout == ("The following keys are going to be accepted:\nUnaccepted Keys:\nweb02\n"
                           "Proceed? [n/Y] ")
    assert "web02" in keyed.keys()["minions_pre"]
    proc = keyed.key("-a", "nosuch*", "-y")
    assert (proc.returncode, proc.stdout) == (0, "The key glob 'nosuch*' does not match any unaccepted keys.\n")


def test_reject_then_accept_all(keyed: Cluster) -> None:
    proc = keyed.key("-r", "bad01", "-y")
    assert proc.stdout == ("The following keys are going to be rejected:\nUnaccepted Keys:\nbad01\n"
                           "Key for minion bad01 rejected.\n")
    proc = keyed.key("-A", "-y")
    assert proc.stdout == ("The following keys are going to be accepted:\nUnaccepted Keys:\ndb01\nweb02\n"
                           "Key for minion db01 accepted.\nKey for minion web02 accepted.\n")
    assert keyed.keys() == {"minions": ["db01", "web01", "web02"], "minions_pre": [],
                            "minions_rejected": ["bad01"], "minions_denied": []}
    keyed.wait_ping(["web01", "web02", "db01"])
    proc = touch_markers(keyed, "all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(1.5)
    # bad01 is still running and matches '*', but its key is rejected: it runs nothing
    assert keyed.minions["bad01"].alive()
    assert markers(keyed, "all") == {"web01", "web02", "db01"}
    assert "master answered rejected" in keyed.minions["bad01"].log()


def test_rejecting_an_accepted_key_cuts_the_minion_off(keyed: Cluster) -> None:
    """db01 holds a session and the publish key; rejecting it revokes both (the publish key
    rotates), so the broadcast publication of the next '*' job, which db01 still receives on
    its subscription, is useless to it."""
    proc = keyed.key("-r", "db01", "--include-accepted", "-y")
    assert proc.stdout == ("The following keys are going to be rejected:\nAccepted Keys:\ndb01\n"
                           "Key for minion db01 rejected.\n")
    proc = touch_markers(keyed, "revoked")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(keyed.run("*", "test.ping", "--out", "json", "--static").stdout) == {"web01": True,
                                                                                           "web02": True}
    time.sleep(1.5)
    assert markers(keyed, "revoked") == {"web01", "web02"}


def test_deleted_key_comes_back_pending(keyed: Cluster) -> None:
    proc = keyed.key("-d", "web02", "-y")
    assert proc.stdout == ("The following keys are going to be deleted:\nAccepted Keys:\nweb02\n"
                           "Key for minion web02 deleted.\n")
    # its session is revoked; it re-authenticates and its key is pending again, as with Salt
    wait_for(lambda: "web02" in keyed.keys()["minions_pre"], 20, what="web02 pending again")
    proc = touch_markers(keyed, "deleted")
    assert proc.returncode == 0
    time.sleep(1.5)
    assert markers(keyed, "deleted") == {"web01"}
    proc = keyed.key("-d", "nosuch", "-y")
    assert (proc.returncode, proc.stdout) == (0, "The key glob 'nosuch' does not match any keys.\n")


def test_key_events(keyed: Cluster) -> None:
    seen = events(keyed)
    key_events = [(e["data"]["id"], e["data"]["act"]) for e in seen if e["tag"] == "salt/key"]
    assert ("web01", "accept") in key_events and ("bad01", "reject") in key_events
    assert ("db01", "reject") in key_events and ("web02", "delete") in key_events
    auth = {(e["data"]["id"], e["data"]["act"]) for e in seen if e["tag"] == "salt/auth"}
    assert {("web01", "accept"), ("bad01", "reject")} <= auth
    started = {e["data"]["id"] for e in seen if e["tag"] == "minion_start"}
    assert started >= {"web01", "db01"}
    assert "bad01" not in started


def test_master_finger_pins_the_master_key(keyed: Cluster) -> None:
    """A minion with master_finger set to `saltpan key -F`'s Local Keys value works; one pinned to
    another fingerprint never trusts this master, even once its key is accepted."""
    fingerprint = keyed.key("-F").stdout.splitlines()[1].split(":  ")[1]
    wrong = ":".join(["00"] * 32)
    keyed.add_minion("pinok", master_finger=fingerprint)
    keyed.add_minion("pinbad", master_finger=wrong)
    keyed.start_minions("pinok", "pinbad")
    keyed.accept_all(["pinok", "pinbad"])
    keyed.wait_ping(["pinok"])
    proc = keyed.run("-L", "pinok,pinbad", "test.ping", "--timeout", "2", "--gather-job-timeout", "1")
    assert "pinok:\n    True" in proc.stdout and "pinbad:\n    Minion did not return" in proc.stdout
    log = keyed.minions["pinbad"].log()
    assert fingerprint in log and wrong in log
    keyed.minions["pinbad"].stop()
    keyed.key("-d", "pinbad", "-y")


def test_stopped_minion_is_named_after_the_timeout(keyed: Cluster) -> None:
    keyed.minions["web01"].stop()
    assert not keyed.minions["web01"].alive()
    started = time.monotonic()
    proc = keyed.run("web*", "test.ping", "--timeout", "2", "--gather-job-timeout", "1")
    assert time.monotonic() - started < 20
    assert proc.returncode == 1
    assert "web01:\n    Minion did not return. [No response]" in proc.stdout
    assert "web01" in proc.stderr
