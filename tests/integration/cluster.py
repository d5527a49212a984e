"""A real master and real minion processes on 127.0.0.1, for integration tests.

Every daemon is a separate `python -m runtime` process with its own config
under a temp dir, free ports, bounded waits, and is always stopped (SIGTERM,
then SIGKILL) by ``Cluster.stop``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.netutil import free_port

REPO = Path(__file__).resolve().parents[2]


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.1, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last value: {last!r})")


def children_of(pid: int) -> dict[int, str]:
    """Direct children of ``pid``: {child pid: /proc/<pid>/comm}."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out[int(entry.name)] = comm
    return out


class Daemon:
    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env or {}
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        out = open(self.log_path.with_suffix(".out"), "ab")  # noqa: SIM115 - kept open for the process
        env = dict(os.environ, PYTHONPATH=str(REPO), **self.env)
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env,
                                     start_new_session=True)
        out.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 8.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # children too (master workers)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            pass

    def log(self) -> str:
        text = ""
        for path in (self.log_path, self.log_path.with_suffix(".out")):
            if path.exists():
                text += path.read_text(errors="replace")
        return text


def store_opts(kind: str, postgres: Any = None) -> dict[str, Any]:
    """Master options for ``master_store`` ``kind``: {} for sqlite (the default), or a fresh
    database of the suite's PostgreSQL server (tests/pgserver.py) for postgres.  The plane tests
    that touch a store run once with each (the ``master_store`` fixture of conftest.py)."""
    if kind == "sqlite":
        return {}
    return {"master_store": "postgres", "master_store_dsn": postgres.dsn(postgres.fresh_database("plane"))}


class Cluster:
    """tmp dir layout: master.yaml, <minion>.yaml, logs, roots.

    ``master_opts`` may choose the master store (``store_opts``): with ``master_store: postgres``
    the master is started after ``saltpan master --init-store``."""

    def __init__(self, base: Path, pillar_roots: dict | None = None, file_roots: dict | None = None,
                 master_opts: dict | None = None):
        self.base = base
        self.publish_port = free_port()
        self.ret_port = free_port()
        self.master_conf = base / "master.yaml"
        # ipc socket paths must stay under ~107 bytes: keep sock_dir short
        self.sock_dir = Path(tempfile.mkdtemp(prefix="sp-", dir="/tmp"))
        self.master_opts: dict[str, Any] = {
            "root_dir": str(base / "master"),
            "sock_dir": str(self.sock_dir),
            "interface": "127.0.0.1",
            "publish_port": self.publish_port,
            "ret_port": self.ret_port,
            "worker_threads": 2,
            "log_file": str(base / "master.log"),
            "log_level": "info",
            "heartbeat_period": 0.5,
            "pillar_roots": pillar_roots or {"base": [str(base / "pillar")]},
            "file_roots": file_roots or {"base": [str(base / "states")]},
        }
        self.master_opts.update(master_opts or {})
        self.store_ready = False      # master_store: postgres gets `saltpan master --init-store` once
        self.master = Daemon("master", [sys.executable, "-m", "runtime", "master", "-c", str(self.master_conf)],
                             base / "master.log")
        self.minions: dict[str, Daemon] = {}
        self.minion_confs: dict[str, Path] = {}

    # -- config --------------------------------------------------------------------
    def write_master_conf(self) -> None:
        self.master_conf.write_text(yaml.safe_dump(self.master_opts))

    def add_minion(self, minion_id: str, grains: dict | None = None, **opts: Any) -> Path:
        conf = {
            "id": minion_id,
            "root_dir": str(self.base / minion_id),
            "master": "127.0.0.1",
            "master_port": self.ret_port,
            "publish_port": self.publish_port,
            "log_file": str(self.base / f"{minion_id}.log"),
            "log_level": "info",
            "acceptance_wait_time": 0.3,
            "recon_default": 200,
            "recon_max": 2000,
            "auth_timeout": 2.0,
            "request_timeout": 3.0,
            "grains": {"sandbox": str(self.base / f"sandbox-{minion_id}"), **(grains or {})},
        }
        conf.update(opts)
        path = self.base / f"{minion_id}.yaml"
        path.write_text(yaml.safe_dump(conf))
        self.minion_confs[minion_id] = path
        # SALTPAN_TEST_ID lets a job's shell command say which minion ran it (marker files)
        self.minions[minion_id] = Daemon(minion_id, [sys.executable, "-m", "runtime", "minion", "-c", str(path)],
                                         self.base / f"{minion_id}.log", env={"SALTPAN_TEST_ID": minion_id})
        return path

    # -- lifecycle ------------------------------------------------------------------
    def start_master(self, wait: bool = True) -> None:
        self.write_master_conf()
        if self.master_opts.get("master_store") == "postgres" and not self.store_ready:
            # what an operator does once before the first start (docs/operations.md)
            self.saltpan("master", "--init-store", "-c", str(self.master_conf), check=True)
            self.store_ready = True
        self.master.start()
        if wait:
            sock = Path(self.master_opts["sock_dir"]) / "master_event_pub.ipc"
            wait_for(lambda: sock.exists() and self.port_open(self.ret_port), 15, what="master sockets")

    @staticmethod
    def port_open(port: int) -> bool:
        import socket

        with socket.socket() as sock:
            sock.settimeout(0.2)
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def start_minions(self, *ids: str) -> None:
        for minion_id in ids or tuple(self.minions):
            self.minions[minion_id].start()

    @contextmanager
    def running(self) -> Iterator[Cluster]:
        """Start the master and every added minion, accept their keys, wait until each answers
        test.ping; stop everything on the way out, whatever happens."""
        ids = list(self.minions)
        try:
            self.start_master()
            self.start_minions()
            self.accept_all(ids)
            self.wait_ping(ids)
            yield self
        finally:
            self.stop()

    def stop(self) -> None:
        for daemon in self.minions.values():
            daemon.stop()
        self.master.stop()
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    def master_children(self) -> dict[str, int]:
        """The master's child processes by name (``/proc/<pid>/comm``: MWorker-0, Publisher ...)."""
        assert self.master.proc is not None
        return {comm: pid for pid, comm in children_of(self.master.proc.pid).items()}

    # -- commands -------------------------------------------------------------------
    def saltpan(self, *args: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-m", "runtime", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=REPO, env=env)
        if check and proc.returncode != 0:
            raise AssertionError(f"saltpan {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def key(self, *args: str) -> subprocess.CompletedProcess:
        return self.saltpan("key", "-c", str(self.master_conf), *args)

    def keys(self) -> dict[str, list[str]]:
        return json.loads(self.key("-L", "--out", "json").stdout)

    def accept_all(self, expected: list[str], timeout: float = 20) -> None:
        def known() -> bool:
            keys = self.keys()
            return set(expected) <= set(keys["minions_pre"]) | set(keys["minions"])

        wait_for(known, timeout, what=f"pending keys of {expected}")
        self.key("-A", "-y")

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return self.saltpan("run", "-c", str(self.master_conf), *args, timeout=timeout)

    def run_json(self, *args: str, timeout: float = 60) -> dict[str, Any]:
        """`saltpan run ... --out json --static` as {minion: return}."""
        proc = self.run(*args, "--out", "json", "--static", timeout=timeout)
        start = proc.stdout.find("{")
        return json.loads(proc.stdout[start:]) if start >= 0 else {}

    def wait_ping(self, ids: list[str], timeout: float = 30) -> None:
        """Wait until every minion in ``ids`` answers test.ping (first until their heartbeats
        make them present, so that a ping is not wasted on a minion still authenticating)."""
        deadline = time.monotonic() + timeout

        def present() -> bool:
            proc = self.saltpan("minions", "-c", str(self.master_conf), "--status", "--out", "json")
            return proc.returncode == 0 and set(ids) <= set(json.loads(proc.stdout)["up"])

        wait_for(present, timeout, interval=0.2, what=f"heartbeats from {ids}")

        def ok() -> bool:
            data = self.run_json("-L", ",".join(ids), "test.ping", "--timeout", "2", "--gather-job-timeout", "1")
            return all(data.get(m) is True for m in ids)

        wait_for(ok, max(5.0, deadline - time.monotonic()), interval=0.1, what=f"test.ping from {ids}")

    def opts(self) -> dict[str, Any]:
        from runtime import config

        return config.load(str(self.master_conf), "master")
