"""Masters and minions for the execution-plane benchmarks (jobs.py, swarm.py): saltpan's and Salt's.

Every daemon runs in its own session (process group) on 127.0.0.1 with free ports, its
config and state under a scratch directory, and is stopped with SIGTERM then SIGKILL to
the whole group (``Daemon.stop``); ``Fleet`` objects stop all they started, and a script's
``try/finally`` calls them.  Memory is read from /proc (RSS and PSS from smaps_rollup,
summed over a daemon's process tree).
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import salt_venv  # noqa: E402
from common import free_port, port_open, username, wait_for  # noqa: E402

# -- processes and memory ------------------------------------------------------------------

class Daemon:
    """One daemon process (and whatever it forks), in its own process group."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.env = env or common.bench_env()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                         cwd=str(common.REPO_DIR), start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self) -> None:
        """SIGTERM to the daemon's process group, without waiting."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        pgid = self.proc.pid
        if self.proc.poll() is None:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(pgid, signal.SIGKILL)  # what the daemon forked, too
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the /proc/<pid>/stat fields after the command name) of every process still there."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), fields


def children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for pid, fields in proc_stats():
        out.setdefault(int(fields[1]), []).append(pid)
    return out


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants."""
    kids = children_map()
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(kids.get(current, []))
    return out


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB, from /proc/<pid>/smaps_rollup ((0, 0) when it is gone)."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


@dataclass
class Memory:
    processes: int
    rss_kib: int
    pss_kib: int

    def text(self) -> str:
        return f"{common.mib(self.rss_kib)} RSS / {common.mib(self.pss_kib)} PSS ({self.processes} processes)"


def tree_memory(pid: int) -> Memory:
    pids = process_tree(pid)
    pairs = [memory_kib(p) for p in pids]
    return Memory(len(pids), sum(r for r, _ in pairs), sum(p for _, p in pairs))


def leftovers(pgids: set[int]) -> list[str]:
    """Processes still alive in any of these process groups, as "pid cmdline" lines."""
    out = []
    for pid, fields in proc_stats():
        if int(fields[2]) not in pgids or fields[0] == "Z":
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        out.append(f"{pid} {cmdline}")
    return out


# -- one cluster (master + minions) of either implementation ----------------------------------

class Cluster:
    """A master and its minions; ``kind`` is "saltpan" or "salt"."""

    def __init__(self, kind: str, base: Path, fleet: common.Fleet, master_extra: dict[str, Any] | None = None):
        self.kind = kind
        self.base = base
        self.fleet = fleet
        self.publish_port, self.ret_port = free_port(), free_port()
        base.mkdir(parents=True, exist_ok=True)
        # ipc paths are limited to 107 bytes: saltpan's sock_dir lives in a short temp dir
        self.sock_dir = Path(tempfile.mkdtemp(prefix=f"{kind[:2]}b-", dir="/tmp")) if kind == "saltpan" \
            else base / "m" / "sock"
        self.master: Daemon | None = None
        self.minions: dict[str, Daemon] = {}
        self.others: list[Daemon] = []
        self.master_conf = self._write_master_conf(master_extra or {})

    # -- configs ---------------------------------------------------------------------------
    def _write_master_conf(self, extra: dict[str, Any]) -> Path:
        root = self.base / "m"
        conf: dict[str, Any] = {
            "interface": "127.0.0.1",
            "publish_port": self.publish_port,
            "ret_port": self.ret_port,
            "root_dir": str(root),
            "pki_dir": str(root / "pki"),
            "cachedir": str(root / "cache"),
            "sock_dir": str(self.sock_dir),
            "log_file": str(root / "master.log"),
            "log_level": "warning",
            "auto_accept": True,
            "file_roots": {"base": [str(self.fleet.states_dir)]},
            "pillar_roots": {"base": [str(self.fleet.pillar_dir)]},
        }
        if self.kind == "salt":
            conf["pidfile"] = str(root / "master.pid")
            conf["user"] = username()
        conf.update(extra)
        conf_dir = self.base / "master-conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        path = conf_dir / ("master" if self.kind == "salt" else "master.json")
        path.write_text(json.dumps(conf, indent=2) + "\n", encoding="utf-8")
        return path

    def minion_conf(self, minion_id: str, grains: dict[str, Any], extra: dict[str, Any] | None = None) -> Path:
        root = self.base / minion_id
        conf: dict[str, Any] = {
            "id": minion_id,
            "master": "127.0.0.1",
            "master_port": self.ret_port,
            "publish_port": self.publish_port,
            "root_dir": str(root),
            "pki_dir": str(root / "pki"),
            "cachedir": str(root / "cache"),
            "log_file": str(root / "minion.log"),
            "log_level": "warning",
            "grains": grains,
        }
        if self.kind == "salt":
            conf["sock_dir"] = str(root / "sock")
            conf["pidfile"] = str(root / "minion.pid")
            conf["user"] = username()
            conf["acceptance_wait_time"] = 1
        else:
            conf["sock_dir"] = str(self.sock_dir / minion_id)
            conf["acceptance_wait_time"] = 1
        conf.update(extra or {})
        conf_dir = self.base / "conf" / minion_id
        conf_dir.mkdir(parents=True, exist_ok=True)
        path = conf_dir / ("minion" if self.kind == "salt" else "minion.json")
        path.write_text(json.dumps(conf, indent=2) + "\n", encoding="utf-8")
        return path

    # -- commands ----------------------------------------------------------------------------
    def saltpan_bin(self) -> str:
        return str(Path(sys.executable).parent / "saltpan")

    def salt_bin(self, name: str) -> str:
        return str(salt_venv.venv_dir() / "bin" / name)

    def master_argv(self) -> list[str]:
        if self.kind == "salt":
            return [self.salt_bin("salt-master"), "-c", str(self.master_conf.parent)]
        return [self.saltpan_bin(), "master", "-c", str(self.master_conf)]

    def minion_argv(self, conf: Path) -> list[str]:
        if self.kind == "salt":
            return [self.salt_bin("salt-minion"), "-c", str(conf.parent)]
        return [self.saltpan_bin(), "minion", "-c", str(conf)]

    def ping_argv(self, target: str = "*", timeout: float = 5) -> list[str]:
        """The CLI test.ping as a user types it, with JSON output to check who answered."""
        if self.kind == "salt":
            return [self.salt_bin("salt"), "-c", str(self.master_conf.parent), target, "test.ping", "--out", "json",
                    "--static", "-t", str(int(timeout))]
        return [self.saltpan_bin(), "run", "-c", str(self.master_conf), target, "test.ping", "--out", "json",
                "--static", "--timeout", str(timeout)]

    # -- lifecycle -----------------------------------------------------------------------------
    def start_master(self, timeout: float = 90) -> None:
        self.master = Daemon(f"{self.kind}-master", self.master_argv(), self.base / "master.out")
        self.master.start()

        def up() -> bool:
            if not self.master.alive():
                raise RuntimeError(f"{self.kind} master exited:\n{self.master.log_tail()}")
            return port_open(self.ret_port) and port_open(self.publish_port)

        wait_for(up, timeout, what=f"{self.kind} master ports")

    def start_minion(self, minion_id: str, grains: dict[str, Any], extra: dict[str, Any] | None = None) -> Daemon:
        conf = self.minion_conf(minion_id, grains, extra)
        daemon = Daemon(f"{self.kind}-{minion_id}", self.minion_argv(conf), self.base / minion_id / "out.log")
        daemon.start()
        self.minions[minion_id] = daemon
        return daemon

    def start_other(self, name: str, argv: list[str]) -> Daemon:
        daemon = Daemon(f"{self.kind}-{name}", argv, self.base / f"{name}.out")
        daemon.start()
        self.others.append(daemon)
        return daemon

    def ping(self, target: str = "*", timeout: float = 5) -> tuple[common.ProcessRun, dict[str, Any]]:
        run = common.run_process(self.ping_argv(target, timeout), timeout=timeout + 120)
        return run, parse_returns(run.stdout)

    def wait_answering(self, ids: list[str], timeout: float, ping_timeout: float = 5) -> float:
        """Seconds until every id answers one CLI test.ping."""
        start = time.monotonic()

        def ok() -> list[str] | bool:
            for daemon in self.minions.values():
                if not daemon.alive():
                    raise RuntimeError(f"{daemon.name} exited:\n{daemon.log_tail()}")
            _, returns = self.ping("*", ping_timeout)
            missing = [m for m in ids if returns.get(m) is not True]
            return not missing or False

        wait_for(ok, timeout, interval=0.5, what=f"{self.kind}: test.ping from {len(ids)} minions")
        return time.monotonic() - start

    def pgids(self) -> set[int]:
        """Process groups of every daemon started (each runs in its own session)."""
        return {d.proc.pid for d in [*self.others, *self.minions.values(), self.master] if d and d.proc}

    def stop(self) -> None:
        daemons = [*self.others, *self.minions.values()]
        for daemon in daemons:  # SIGTERM to all first: one by one, 150 salt-minions take minutes to stop
            daemon.terminate()
        deadline = time.monotonic() + 20
        for daemon in daemons:
            daemon.stop(timeout=max(0.1, deadline - time.monotonic()))
        if self.master is not None:
            self.master.stop()
        if self.kind == "saltpan":
            shutil.rmtree(self.sock_dir, ignore_errors=True)


def parse_returns(stdout: str) -> dict[str, Any]:
    """{minion: return} from ``--out json --static`` of either CLI (Salt may print one object per minion)."""
    out: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    text = stdout
    index = text.find("{")
    while index >= 0:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            out.update(value)
        index = text.find("{", end)
    return out


def fleet_minions(fleet: common.Fleet, scratch: Path, count: int) -> list[tuple[str, dict[str, Any]]]:
    """The first count bench-fleet minions (ids and grains, sandbox under scratch)."""
    minions = common.load_minions(fleet, scratch / "sandbox")[:count]
    return [(minion_id, {k: v for k, v in grains.items() if k != "id"}) for minion_id, grains in minions]
