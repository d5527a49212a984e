"""Issue 21: three masters on one PostgreSQL (``cluster_id``), nine minions spread over them, all
real processes on 127.0.0.1 (docs/operations.md "A cluster of masters", docs/protocol.md
"Masters in one cluster").

Each minion points at one master (moving between masters is the minion's ``master: [list]``).
The suite's PostgreSQL server (tests/pgserver.py: initdb + pg_ctl on a free port) is stopped for
20 s in the outage test and started again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import config
from runtime.events import EventListener
from runtime.master.maintenance import read_presence
from tests.integration.cluster import Cluster, wait_for
from tests.pgserver import Postgres

pytestmark = pytest.mark.slow

MASTERS = ("a", "b", "c")
CLUSTER = "testcluster"


class Masters:
    """Three ``Cluster`` harnesses (one master each) on one database."""

    def __init__(self, base: Path, dsn: str):
        self.by_name: dict[str, Cluster] = {}
        for name in MASTERS:
            cl = Cluster(base / name, master_opts={
                "id": f"master-{name}", "master_store": "postgres", "master_store_dsn": dsn, "cluster_id": CLUSTER,
                "worker_threads": 1})
            (base / name).mkdir(parents=True, exist_ok=True)
            cl.store_ready = name != "a"     # --init-store once, by the first
            self.by_name[name] = cl
        self.home: dict[str, str] = {}     # minion -> master name
        for name, cl in self.by_name.items():
            for i in (1, 2, 3):
                minion_id = f"{name}m{i}"
                cl.add_minion(minion_id)
                self.home[minion_id] = name

    @property
    def minions(self) -> list[str]:
        return sorted(self.home)

    def __getitem__(self, name: str) -> Cluster:
        return self.by_name[name]

    def start(self) -> None:
        for cl in self.by_name.values():
            cl.start_master()
        for cl in self.by_name.values():
            cl.start_minions()

    def stop(self) -> None:
        for cl in self.by_name.values():
            cl.stop()

    def ping_all(self, via: str, timeout: float = 5) -> set[str]:
        """The minions that answered test.ping published on master ``via``."""
        got = self[via].run_json("*", "test.ping", "--timeout", str(timeout), "--gather-job-timeout", "2")
        return {minion for minion, ret in got.items() if ret is True}


def lookup(cl: Cluster, jid: str) -> dict[str, Any]:
    proc = cl.saltpan("jobs", "-c", str(cl.master_conf), "lookup", jid, "--out", "json")
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def logs(masters: Masters) -> str:
    return "\n".join(f"--- master {n}\n{cl.master.log()[-3000:]}" for n, cl in masters.by_name.items())


@pytest.fixture(scope="module")
def masters(tmp_path_factory: pytest.TempPathFactory, postgres: Postgres) -> Iterator[Masters]:
    base = tmp_path_factory.mktemp("masters")
    ms = Masters(base, postgres.dsn(postgres.fresh_database("cluster")))
    try:
        ms.start()
        # every key is pending in the one shared table: accepting them on master a lets the
        # minions of b and c in through their own masters
        ms["a"].accept_all(ms.minions, timeout=60)
        wait_for(lambda: ms.ping_all("a") == set(ms.minions), 90, interval=0.5,
                 what="test.ping from all nine minions through master a")
        yield ms
    finally:
        ms.stop()


def test_the_masters_share_one_signing_key(masters: Masters) -> None:
    cluster_pubs = {(Path(cl.opts()["pki_dir"]) / "cluster.pub").read_bytes() for cl in masters.by_name.values()}
    assert len(cluster_pubs) == 1
    own = {(Path(cl.opts()["pki_dir"]) / "master.pub").read_bytes() for cl in masters.by_name.values()}
    assert len(own) == 3          # each master keeps its own key pair in its own pki_dir
    # the first master's own key became the cluster key; every minion trusts it, whichever its master
    assert cluster_pubs == {(Path(masters["a"].opts()["pki_dir"]) / "master.pub").read_bytes()}
    for minion_id, name in masters.home.items():
        pki_dir = config.load(str(masters[name].minion_confs[minion_id]), "minion")["pki_dir"]
        trusted = Path(pki_dir) / "minion_master.pub"
        assert trusted.read_bytes() in cluster_pubs, minion_id


def test_ping_on_each_master_gets_all_nine(masters: Masters) -> None:
    for name in MASTERS:
        wait_for(lambda n=name: masters.ping_all(n) == set(masters.minions), 30, interval=0.5,
                 what=f"all nine through master {name}\n" + logs(masters))


def test_a_job_published_on_a_is_looked_up_on_b_with_every_return(masters: Masters) -> None:
    proc = masters["a"].run("*", "test.echo", "cluster", "--async")
    assert proc.returncode == 0, proc.stderr
    jid = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert jid, proc.stdout
    want = dict.fromkeys(masters.minions, "cluster")
    wait_for(lambda: lookup(masters["b"], jid.group(1)) == want, 30, interval=0.5, what="nine returns on master b")
    assert lookup(masters["c"], jid.group(1)) == want


def test_events_of_every_master_reach_each_bus(masters: Masters) -> None:
    listener = EventListener(str(masters["c"].sock_dir), "salt/job/")
    try:
        assert listener.wait_connected(str(masters["c"].sock_dir), 5.0)
        proc = masters["a"].run("*", "test.echo", "events", "--async")
        jid = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
        assert jid, proc.stdout
        seen_new = False
        returned: set[str] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (seen_new and returned == set(masters.minions)):
            event = listener.get(0.5)
            if event is None:
                continue
            tag, data = event
            if tag == f"salt/job/{jid.group(1)}/new":
                seen_new = True
                assert data["minions"] == masters.minions
            elif tag.startswith(f"salt/job/{jid.group(1)}/ret/"):
                returned.add(data["id"])
                assert data["return"] == "events"
        assert seen_new, "salt/job/<jid>/new fired on master a did not reach master c's bus"
        assert returned == set(masters.minions), sorted(set(masters.minions) - returned)
    finally:
        listener.close()


def test_status_names_the_master_of_each_minion(masters: Masters) -> None:
    def holders() -> dict[str, Any] | None:
        proc = masters["b"].saltpan("master", "-c", str(masters["b"].master_conf), "--status", "--out", "json")
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        table = data["masters"]
        if all(sorted(table.get(f"master-{n}", {}).get("minions", [])) == [f"{n}m1", f"{n}m2", f"{n}m3"]
               for n in MASTERS):
            return data
        return None

    data = wait_for(holders, 20, interval=0.5, what="the session registry of the three masters")
    assert data["cluster_id"] == CLUSTER and data["master_id"] == "master-b"
    assert all(row["up"] for row in data["masters"].values())


def test_a_key_deleted_on_b_cuts_the_minion_off_on_a(masters: Masters) -> None:
    victim = "am3"
    proc = masters["b"].key("-d", victim, "-y")
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: "sessions of am3 dropped" in masters["a"].master.log(), 15,
             what="master a dropping am3's sessions\n" + logs(masters))
    # no longer targeted (its key is gone from the shared table), and the others unaffected (a
    # revocation starts a new publish epoch on every master: their minions fetch the new key)
    others = set(masters.minions) - {victim}
    wait_for(lambda: masters.ping_all("a", timeout=3) == others, 20, interval=0.5,
             what="the eight others through master a\n" + logs(masters))
    # the minion comes back as a pending key (in the shared table); accepted on c, it is back in on a
    wait_for(lambda: victim in masters["c"].keys()["minions_pre"], 30, interval=0.5, what="am3 pending again")
    assert masters["c"].key("-a", victim, "-y").returncode == 0
    wait_for(lambda: masters["a"].run_json("-L", victim, "test.ping", "--timeout", "2").get(victim) is True, 30,
             interval=0.5, what="am3 back through master a")


def test_postgresql_away_for_20_s_then_back(masters: Masters, postgres: Postgres) -> None:
    """docs/operations.md "When PostgreSQL is unreachable": the masters keep their minions, refuse
    publications, keep the returns of running jobs and hand them to the job cache afterwards; nothing
    needs a restart."""
    proc = masters["a"].run("*", "test.sleep", "6", "--async")
    jid_match = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert jid_match, proc.stdout
    jid = jid_match.group(1)

    def running_everywhere() -> bool:
        found = masters["a"].run_json("*", "saltutil.find_job", jid, "--timeout", "3", "--gather-job-timeout", "1")
        return set(found) == set(masters.minions) and all(v for v in found.values())

    wait_for(running_everywhere, 20, interval=0.2, what="the sleep running on all nine minions")
    postgres.stop()
    try:
        stopped = time.monotonic()
        refused = masters["b"].run("*", "test.ping")
        assert refused.returncode != 0
        assert "store_unavailable" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
        # `saltpan minions` needs the key table: it says the database is away
        listed = masters["c"].saltpan("minions", "-c", str(masters["c"].master_conf))
        assert listed.returncode == 2 and "is unavailable" in listed.stderr, listed.stderr
        # the minions keep their sessions: heartbeats answered, presence unchanged on each master
        time.sleep(3)
        for name, cl in masters.by_name.items():
            up = read_presence(cl.opts()["cachedir"])
            assert {m for m, home in masters.home.items() if home == name} <= up, (name, up)
        time.sleep(max(0.0, 20 - (time.monotonic() - stopped)))
    finally:
        postgres.start()
    want = dict.fromkeys(masters.minions, True)
    # the returns that came meanwhile were kept by each master and are in the job cache now
    wait_for(lambda: lookup(masters["b"], jid) == want, 45, interval=1.0,
             what="the nine returns kept while PostgreSQL was away\n" + logs(masters))
    for name in MASTERS:
        wait_for(lambda n=name: masters.ping_all(n) == set(masters.minions), 45, interval=0.5,
                 what=f"all nine through master {name} after the outage\n" + logs(masters))


def test_a_master_killed_loses_nothing_from_the_job_cache(masters: Masters) -> None:
    proc = masters["b"].run("*", "test.echo", "before", "--async")
    jid_match = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert jid_match, proc.stdout
    want = dict.fromkeys(masters.minions, "before")
    wait_for(lambda: lookup(masters["a"], jid_match.group(1)) == want, 30, interval=0.5, what="nine returns")
    import signal

    masters["b"].master.signal(signal.SIGKILL)
    wait_for(lambda: not masters["b"].master.alive(), 10, what="master b gone")
    assert lookup(masters["a"], jid_match.group(1)) == want
    assert lookup(masters["c"], jid_match.group(1)) == want
    others = {m for m, home in masters.home.items() if home != "b"}
    assert others <= masters.ping_all("a", timeout=3)
    # master b started again: its minions re-authenticate and answer through every master
    masters["b"].master.start()
    for name in MASTERS:
        wait_for(lambda n=name: masters.ping_all(n) == set(masters.minions), 60, interval=0.5,
                 what=f"all nine through master {name} after master b's restart\n" + logs(masters))
