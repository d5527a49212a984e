"""Issue 21: a master of the cluster dies, its minions answer through the others.

Three real masters on one PostgreSQL (``master_store: postgres``, ``cluster_id``), listening on
127.0.0.2, 127.0.0.3 and 127.0.0.4 with the same ports; nine minions configured as a Salt user
would for failover: ``master: [home, other, other]``, ``master_type: failover``, a short
``master_alive_interval``.  SIGKILL master B: within 15 s its three minions answer ``test.ping``
published on A; a job that was running on every minion when B died has all nine returns in the
job cache of A and C (B's minions hand theirs to the master they move to); B started again, all
nine answer through every master, wherever they are.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import write_trees
from tests.netutil import free_port
from tests.pgserver import Postgres

pytestmark = pytest.mark.slow

HOSTS = {"a": "127.0.0.2", "b": "127.0.0.3", "c": "127.0.0.4"}
CLUSTER = "failovercluster"
ALIVE_S = 2.0          # the minions' master_alive_interval
FAILOVER_LIMIT_S = 15.0


class HostMaster(Cluster):
    """One master of the cluster, on its own loopback address (the ports are the same for all)."""

    def __init__(self, base: Path, name: str, ports: tuple[int, int], dsn: str) -> None:
        base.mkdir(parents=True, exist_ok=True)
        write_trees(base)
        super().__init__(base, master_opts={
            "id": f"master-{name}", "interface": HOSTS[name], "publish_port": ports[0], "ret_port": ports[1],
            "master_store": "postgres", "master_store_dsn": dsn, "cluster_id": CLUSTER, "worker_threads": 1})
        self.publish_port, self.ret_port = ports
        self.host = HOSTS[name]

    def port_open(self, port: int) -> bool:  # type: ignore[override]
        with socket.socket() as sock:
            sock.settimeout(0.2)
            return sock.connect_ex((self.host, port)) == 0


class FailoverCluster:
    def __init__(self, base: Path, dsn: str) -> None:
        ports = (free_port(), free_port())
        self.masters = {name: HostMaster(base / name, name, ports, dsn) for name in HOSTS}
        self.masters["b"].store_ready = self.masters["c"].store_ready = True   # --init-store once, by a
        self.home: dict[str, str] = {}
        for name, cl in self.masters.items():
            order = [HOSTS[name]] + [HOSTS[n] for n in HOSTS if n != name]    # the home master first
            for i in (1, 2, 3):
                minion_id = f"{name}m{i}"
                cl.add_minion(minion_id, master=order, master_type="failover", master_alive_interval=ALIVE_S,
                              recon_default=500, recon_max=2000)
                self.home[minion_id] = name

    @property
    def minions(self) -> list[str]:
        return sorted(self.home)

    def __getitem__(self, name: str) -> HostMaster:
        return self.masters[name]

    def start(self) -> None:
        for cl in self.masters.values():
            cl.start_master()
        for cl in self.masters.values():
            cl.start_minions()

    def stop(self) -> None:
        for cl in self.masters.values():
            cl.stop()

    def ping_all(self, via: str, timeout: float = 3) -> set[str]:
        got = self[via].run_json("*", "test.ping", "--timeout", str(timeout), "--gather-job-timeout", "1")
        return {minion for minion, ret in got.items() if ret is True}

    def logs(self, minions: bool = False) -> str:
        out = [f"--- master {n}\n{cl.master.log()[-2500:]}" for n, cl in self.masters.items()]
        if minions:
            out += [f"--- minion {m}\n{self[h].minions[m].log()[-1500:]}" for m, h in self.home.items() if h == "b"]
        return "\n".join(out)


def lookup(cl: Cluster, jid: str) -> dict[str, Any]:
    proc = cl.saltpan("jobs", "-c", str(cl.master_conf), "lookup", jid, "--out", "json")
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def holders(cl: Cluster) -> dict[str, list[str]]:
    """master id -> the minions it holds, from ``saltpan master --status`` (the shared registry)."""
    proc = cl.saltpan("master", "-c", str(cl.master_conf), "--status", "--out", "json")
    if proc.returncode != 0:
        return {}
    return {name: sorted(row.get("minions", [])) for name, row in json.loads(proc.stdout)["masters"].items()
            if row.get("up")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, postgres: Postgres) -> Iterator[FailoverCluster]:
    fc = FailoverCluster(tmp_path_factory.mktemp("failover"), postgres.dsn(postgres.fresh_database("failover")))
    try:
        fc.start()
        fc["a"].accept_all(fc.minions, timeout=60)
        wait_for(lambda: fc.ping_all("a") == set(fc.minions), 90, interval=0.5,
                 what="test.ping from all nine minions through master a\n" + fc.logs())
        yield fc
    finally:
        fc.stop()


def test_each_minion_starts_with_its_home_master(cluster: FailoverCluster) -> None:
    want = {f"master-{n}": [f"{n}m1", f"{n}m2", f"{n}m3"] for n in HOSTS}
    wait_for(lambda: holders(cluster["a"]) == want, 20, interval=0.5, what="each minion with the first of its list")


def test_master_b_killed_its_minions_answer_through_a_and_nothing_is_lost(cluster: FailoverCluster) -> None:
    # a job running on all nine as B dies: B's minions return it to the master they move to
    proc = cluster["b"].run("*", "test.sleep", "6", "--async")
    jid_match = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert jid_match, proc.stdout + proc.stderr
    jid = jid_match.group(1)
    # and one that finished before
    proc = cluster["b"].run("*", "test.echo", "before", "--async")
    done_match = re.fullmatch(r"Executed command with job ID: (\d{20})\n", proc.stdout)
    assert done_match, proc.stdout + proc.stderr
    wait_for(lambda: lookup(cluster["a"], done_match.group(1)) == dict.fromkeys(cluster.minions, "before"), 30,
             interval=0.3, what="nine returns of the finished job")

    b_minions = {m for m, home in cluster.home.items() if home == "b"}
    returned = {m for m, value in lookup(cluster["a"], jid).items() if value is True}
    assert not b_minions & returned, "the sleep ended before the kill: nothing in flight"
    cluster["b"].master.signal(signal.SIGKILL)
    killed = time.monotonic()
    assert cluster["b"].master.proc is not None
    cluster["b"].master.proc.wait(5)

    answered: set[str] = set()
    while answered != b_minions:
        assert time.monotonic() - killed < FAILOVER_LIMIT_S, \
            f"only {sorted(answered)} of B's minions answered through a in {FAILOVER_LIMIT_S} s\n" \
            + cluster.logs(minions=True)
        got = cluster["a"].run_json("-L", ",".join(sorted(b_minions)), "test.ping", "--timeout", "2",
                                    "--gather-job-timeout", "1")
        answered |= {m for m, ret in got.items() if ret is True}
    took = time.monotonic() - killed
    print(f"master b's minions answered through master a {took:.1f} s after its SIGKILL")
    assert took < FAILOVER_LIMIT_S
    for m in b_minions:
        log = cluster["b"].minions[m].log()
        assert "trying the next master of the list" in log, log[-2000:]

    # nothing lost: the finished job and the one running at the kill, complete on a and c
    want_done = dict.fromkeys(cluster.minions, "before")
    want_sleep = dict.fromkeys(cluster.minions, True)
    for name in ("a", "c"):
        assert lookup(cluster[name], done_match.group(1)) == want_done
        wait_for(lambda n=name: lookup(cluster[n], jid) == want_sleep, 20, interval=0.5,
                 what=f"the nine returns of the job running at the kill, on master {name}\n" + cluster.logs(True))
    # the others were never disturbed; all nine answer through c as well
    assert cluster.ping_all("c") == set(cluster.minions)
    # the session registry says where they went: nine minions held by a and c, none by b
    def moved() -> bool:
        table = holders(cluster["a"])
        return sorted(table.get("master-a", []) + table.get("master-c", [])) == cluster.minions

    wait_for(moved, 10, interval=0.5, what="the session registry: all nine held by a and c")

    # B started again: every minion answers through every master, whichever holds it
    cluster["b"].start_master()
    for name in HOSTS:
        wait_for(lambda n=name: cluster.ping_all(n) == set(cluster.minions), 45, interval=0.5,
                 what=f"all nine through master {name} after master b's restart\n" + cluster.logs())
