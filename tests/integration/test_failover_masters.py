"""Issue 21, minions with several masters: Salt's ``master: [a, b]`` with ``master_type: failover``.
Two real masters on 127.0.0.2 and 127.0.0.3 (the same ports, the same master key pair, as Salt's
multi-master setup asks), the minion's key accepted on both; SIGKILL the first and the minion
answers through the second, then (``master_failback``) returns to the first once it is back."""

from __future__ import annotations

import shutil
import signal
import socket
import time
from pathlib import Path

from tests.integration.cluster import Cluster
from tests.integration.conftest import write_trees

HOST_A, HOST_B = "127.0.0.2", "127.0.0.3"


class HostCluster(Cluster):
    """A Cluster whose master listens on ``host`` (ports shared with another master)."""

    def __init__(self, base: Path, host: str, ports: tuple[int, int] | None = None) -> None:
        base.mkdir(parents=True, exist_ok=True)
        write_trees(base)
        super().__init__(base, master_opts={"interface": host, "heartbeat_period": 0.5})
        self.host = host
        if ports is not None:
            self.publish_port, self.ret_port = ports
            self.master_opts.update(publish_port=ports[0], ret_port=ports[1])

    def port_open(self, port: int) -> bool:  # type: ignore[override]
        with socket.socket() as sock:
            sock.settimeout(0.2)
            return sock.connect_ex((self.host, port)) == 0

    def pki(self) -> Path:
        return Path(self.opts()["pki_dir"])


def ping(cl: Cluster, minion_id: str) -> bool:
    return cl.run_json(minion_id, "test.ping", "--timeout", "2", "--gather-job-timeout", "1").get(minion_id) is True


def wait_answering(cl: Cluster, minion_id: str, limit: float) -> float:
    started = time.monotonic()
    while not ping(cl, minion_id):
        assert time.monotonic() - started < limit, f"{minion_id} did not answer through {cl.host} in {limit} s:\n" \
            + cl.minions.get(minion_id, next(iter(cl.minions.values()))).log()[-3000:]
        time.sleep(0.1)
    return time.monotonic() - started


def test_minion_fails_over_to_the_second_master_and_back(tmp_path: Path) -> None:
    a = HostCluster(tmp_path / "a", HOST_A)
    b = HostCluster(tmp_path / "b", HOST_B, ports=(a.publish_port, a.ret_port))
    a.add_minion("fo1", master=[HOST_A, HOST_B], master_type="failover", master_alive_interval=2.0,
                  master_failback=True, master_failback_interval=1.0, recon_default=1000, recon_max=10000)
    try:
        a.start_master()
        # the second master holds the same key pair, as Salt's multi-master setup requires
        b.write_master_conf()
        b.pki().mkdir(parents=True, exist_ok=True)
        for name in ("master.pem", "master.pub"):
            shutil.copy2(a.pki() / name, b.pki() / name)
        b.start_master()
        a.start_minions()
        a.accept_all(["fo1"])
        (b.pki() / "minions").mkdir(mode=0o700, exist_ok=True)
        shutil.copy2(a.pki() / "minions" / "fo1", b.pki() / "minions" / "fo1")  # accepted on both
        wait_answering(a, "fo1", 30)
        assert not ping(b, "fo1")                   # one master at a time: not connected to the second

        a.master.signal(signal.SIGKILL)
        assert a.master.proc is not None
        a.master.proc.wait(5)
        took = wait_answering(b, "fo1", 15)
        print(f"fo1 answered through {HOST_B} {took:.1f} s after {HOST_A} was killed")
        assert took < 15
        log = a.minions["fo1"].log()
        assert "trying the next master of the list" in log and HOST_B in log

        a.start_master()                           # master_failback: back to the first master
        took = wait_answering(a, "fo1", 15)
        print(f"fo1 answered through {HOST_A} again {took:.1f} s after it restarted")
        assert "answers again: moving back to it" in a.minions["fo1"].log()
    finally:
        a.stop()
        b.stop()
