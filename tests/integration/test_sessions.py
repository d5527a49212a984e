"""Issue 7: minion sessions survive master restarts, back off, notice a frozen master,
and a deleted key cuts a minion off for good."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.crypt.errors import NeedPublishKey, PublicationRefused, RemoteRefusal
from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import write_trees
from tests.integration.rogue import Rogue, Sniffer

IDS = ["s1", "s2", "s3"]


@pytest.fixture()
def sessions_cluster(tmp_path: Path) -> Iterator[Cluster]:
    write_trees(tmp_path)
    cl = Cluster(tmp_path, master_opts={"heartbeat_period": 0.5})
    for minion_id in IDS:
        cl.add_minion(minion_id, recon_default=500, recon_max=4000, master_alive_interval=2.0)
    with cl.running():
        yield cl


def test_master_sigkill_and_restart(sessions_cluster: Cluster) -> None:
    cl = sessions_cluster
    cl.master.signal(signal.SIGKILL)
    cl.master.proc.wait(5)
    time.sleep(1.0)
    cl.start_master()  # counted from the new master's ports accepting connections: its own start-up
    started = time.monotonic()  # takes seconds on a loaded machine, and is not what this test is about
    cl.wait_ping(IDS, timeout=4.0 + 6)
    print(f"every minion answered {time.monotonic() - started:.1f} s after the restart")
    assert time.monotonic() - started < 4.0 + 6  # recon_max + a few seconds (master start-up included)


@pytest.mark.slow
def test_backoff_grows_and_stays_under_recon_max(sessions_cluster: Cluster) -> None:
    cl = sessions_cluster
    # the log file alone (Daemon.log() appends the process's stdout, which would shift offsets)
    logged = {minion_id: cl.minions[minion_id].log_path.stat().st_size for minion_id in IDS}
    cl.master.stop()
    time.sleep(30)
    cl.start_master()
    cl.wait_ping(IDS, timeout=20)
    for minion_id in IDS:
        with open(cl.minions[minion_id].log_path, "rb") as log_file:
            log_file.seek(logged[minion_id])
            outage = log_file.read().decode(errors="replace")
        retries = [(float(delay), float(backoff))
                   for delay, backoff in re.findall(r"reconnecting in ([0-9.]+) s \(backoff ([0-9.]+)", outage)]
        assert len(retries) >= 4, f"{minion_id} logged too few retries: {retries}"
        # Swarmkit's rule with recon_default 0.5, recon_max 4: 0.5, 1.5, 3.5, 4, 4, ...
        expected, backoff = [], 0.0
        for _ in retries:
            backoff = min(0.5 + 2 * backoff, 4.0)
            expected.append(round(backoff, 2))
        assert [backoff for _, backoff in retries] == expected, retries
        # each actual (jittered) delay is drawn below its backoff, so under recon_max
        assert all(0 <= delay <= backoff <= 4.0 for delay, backoff in retries), retries


def test_frozen_master_is_detected_by_heartbeats(sessions_cluster: Cluster) -> None:
    cl = sessions_cluster
    cl.master.signal(signal.SIGSTOP)
    try:
        wait_for(lambda: all("missed heartbeats" in cl.minions[m].log() for m in IDS), 15,
                 what="minions noticing the frozen master")
    finally:
        cl.master.signal(signal.SIGCONT)
    cl.wait_ping(IDS, timeout=20)


def test_deleted_key_cuts_the_minion_off(sessions_cluster: Cluster) -> None:
    cl = sessions_cluster
    rogue = Rogue("rogue01", cl.ret_port, cl.publish_port)
    assert rogue.auth().outcome == "pending"
    assert cl.key("-a", "rogue01", "-y").returncode == 0
    assert rogue.auth().outcome == "accepted"
    old_receiver = rogue.receiver()
    sniffer = Sniffer(cl.publish_port)
    try:
        assert cl.key("-d", "s3", "-y").returncode == 0
        assert cl.key("-d", "rogue01", "-y").returncode == 0
        time.sleep(0.5)
        published = cl.run("*", "test.ping", "--async")
        jid = published.stdout.strip().rsplit(" ", 1)[-1]
        wait_for(lambda: f"with jid {jid}" in cl.minions["s1"].log(), 10, what="s1 running the later job")
        time.sleep(1.0)
        assert f"with jid {jid}" not in cl.minions["s3"].log()
        data = cl.run_json("*", "test.ping", "--timeout", "3")
        assert set(data) == {"s1", "s2"}
        captured = []
        while (pub := sniffer.next(1.0)) is not None:
            captured.append(pub[1])
        assert captured, "the sniffer saw the publications"
        for body in captured:
            with pytest.raises(PublicationRefused) as info:
                old_receiver.open(body)
            assert isinstance(info.value, NeedPublishKey)
        with pytest.raises(RemoteRefusal):
            rogue.request({"cmd": "_publish_key"})
        assert rogue.auth().outcome == "pending"  # a deleted key starts over, never silently accepted
        wait_for(lambda: "s3" in cl.keys()["minions_pre"], 10, what="s3 re-registering as pending")
    finally:
        sniffer.close()
        rogue.close()


@pytest.mark.slow
def test_a_minion_slows_its_heartbeats_as_the_masters_fleet_grows(tmp_path: Path) -> None:
    """The master asks for longer heartbeat periods as its sessions grow (one heartbeat a second in
    all here, ``heartbeat_max_rate: 1``); a minion authenticated when the fleet was one minion
    takes the longer period from its heartbeat replies, as minions authenticated later get it in
    their grant (10,000 minions launched at once sent 740 heartbeats a second otherwise, not 200)."""
    from runtime.master.store import factory

    write_trees(tmp_path)
    cl = Cluster(tmp_path, master_opts={"heartbeat_period": 0.3, "heartbeat_max_rate": 1.0, "auto_accept": True})
    later = ["h2", "h3", "h4", "h5"]
    for minion_id in ["h1", *later]:
        cl.add_minion(minion_id)
    store = None
    try:
        cl.start_master()
        cl.start_minions("h1")
        cl.wait_ping(["h1"], timeout=30)
        store = factory.open_session_store(cl.opts())

        def beats(seconds: float) -> list[float]:
            """The gaps between h1's requests (only heartbeats: it runs no job) over ``seconds``."""
            seen: list[int] = []
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                value = store.last_seen().get("h1")
                if value is not None and (not seen or value != seen[-1]):
                    seen.append(value)
                time.sleep(0.05)
            return [(b - a) / 1000 for a, b in zip(seen, seen[1:], strict=False)]

        alone = beats(4.0)
        assert alone and max(alone) < 2.0, alone                 # 1 session: max(0.3, 1 / 1) s
        cl.start_minions(*later)
        cl.wait_ping(["h1", *later], timeout=30)
        time.sleep(2 * 1.0 + 1.0)                                # h1's next reply tells it 5 s
        grown = beats(16.0)
        print(f"h1's heartbeat gaps alone {alone}, then {grown}")
        assert grown and min(grown[-2:]) >= 4.0, grown           # 5 sessions: 5 s
    finally:
        if store is not None:
            store.close()
        cl.stop()
