"""A master and N minion processes on 127.0.0.1, for saltpan or real Salt, on the bench fleet.

Used by bench/remote_highstate.py; fleet, environment and RESULTS.md helpers come from
bench/common.py.  Configs are written as JSON (YAML to both implementations).  Every daemon
runs in its own process group and is always stopped (SIGTERM, then SIGKILL) by ``stop()``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    REPO_DIR,
    Fleet,
    bench_env,
    free_port,
    load_minions,
    port_open,
    sample_ids,
    username,
    wait_for,
)

FIRST_MINION = "web-0001"


def pick_minions(fleet: Fleet, count: int) -> list[str]:
    """count ids spread evenly over the fleet (deterministic), web-0001 first."""
    with open(fleet.root / "grains.json", encoding="utf-8") as fh:
        ids = [entry["id"] for entry in json.load(fh)["minions"]]
    return sample_ids(ids, count, always=(FIRST_MINION,))


# -- processes -----------------------------------------------------------------------------

class Daemon:
    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None):
        self.name, self.argv, self.log, self.env = name, argv, log, env
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env or bench_env(),
                                         cwd=REPO_DIR, start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def reap(self, deadline: float) -> None:
        """Wait until deadline (monotonic) for a terminated daemon, then kill its whole group."""
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # children (master workers, job processes) too
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass


def stop_all(daemons: Sequence[Daemon], grace: float = 10.0) -> None:
    """SIGTERM every daemon at once, give them grace seconds together, then SIGKILL what is left."""
    for daemon in daemons:
        daemon.terminate()
    deadline = time.monotonic() + grace
    for daemon in daemons:
        daemon.reap(deadline)


def run_cli(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> tuple[float, int, str, str]:
    """(wall seconds, exit status, stdout, stderr) of one CLI command, start-up included."""
    start = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env or bench_env(),
                          cwd=REPO_DIR)
    return time.perf_counter() - start, proc.returncode, proc.stdout, proc.stderr


def parse_json_output(text: str) -> dict[str, Any]:
    """The {minion: return} map of ``--out json --static`` output (anything before it skipped)."""
    start = text.find("{")
    if start < 0:
        return {}
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


# -- clusters --------------------------------------------------------------------------------

@dataclass
class StateRun:
    seconds: float
    minions: int
    states: int
    changed: int
    failed: int
    problems: list[str] = field(default_factory=list)


def summarize(returns: dict[str, Any], expected: Sequence[str], seconds: float) -> StateRun:
    run = StateRun(seconds, 0, 0, 0, 0)
    for minion_id in expected:
        ret = returns.get(minion_id)
        if not isinstance(ret, dict):
            run.problems.append(f"{minion_id}: {str(ret)[:300]}")
            continue
        run.minions += 1
        for key, state in ret.items():
            if not isinstance(state, dict):
                continue
            run.states += 1
            if state.get("result") is False:
                run.failed += 1
                run.problems.append(f"{minion_id} {key}: {str(state.get('comment'))[:200]}")
            elif state.get("changes"):
                run.changed += 1
    return run


class Cluster:
    """What both implementations share: scratch layout, sandboxes, ports, daemons."""

    name = "?"

    def __init__(self, scratch: Path, fleet: Fleet, ids: list[str]):
        self.scratch = scratch
        self.fleet = fleet
        self.ids = ids
        self.publish_port = free_port()
        self.ret_port = free_port()
        self.master: Daemon | None = None
        self.minions: list[Daemon] = []
        scratch.mkdir(parents=True, exist_ok=True)
        # __SANDBOX__ becomes <scratch>/sandbox/<minion id>
        self.grains = {m: g for m, g in load_minions(fleet, scratch / "sandbox") if m in ids}

    def sandbox(self, minion_id: str) -> Path:
        return self.scratch / "sandbox" / minion_id

    def minion_root(self, minion_id: str) -> Path:
        return self.scratch / "minions" / minion_id

    def reset(self) -> None:
        """Before a first run: empty sandboxes and the minions' file caches (a cold first run)."""
        for minion_id in self.ids:
            shutil.rmtree(self.sandbox(minion_id), ignore_errors=True)
            self.sandbox(minion_id).mkdir(parents=True)
            for cache in self.file_caches(minion_id):
                shutil.rmtree(cache, ignore_errors=True)

    def file_caches(self, minion_id: str) -> list[Path]:
        raise NotImplementedError

    def stop(self) -> None:
        stop_all(self.minions)
        if self.master is not None:
            stop_all([self.master])

    def logs(self) -> str:
        out = []
        for path in sorted((self.scratch / "logs").glob("*")):
            text = path.read_text(errors="replace")
            if text.strip():
                out.append(f"== {path.name}\n{text[-3000:]}")
        return "\n".join(out)


class SaltpanCluster(Cluster):
    name = "saltpan"

    def __init__(self, scratch: Path, fleet: Fleet, ids: list[str], python: str = sys.executable):
        super().__init__(scratch, fleet, ids)
        self.python = python
        self.master_conf = scratch / "master.yaml"

    def cli(self, *args: str) -> list[str]:
        return [self.python, "-m", "runtime", *args]

    def start(self) -> None:
        logs = self.scratch / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        master = {
            "root_dir": str(self.scratch / "master"), "interface": "127.0.0.1",
            "publish_port": self.publish_port, "ret_port": self.ret_port,
            "log_file": str(logs / "master.log"), "log_level": "warning",
            "file_roots": {"base": [str(self.fleet.states_dir)]},
            "pillar_roots": {"base": [str(self.fleet.pillar_dir)]},
        }
        self.master_conf.write_text(json.dumps(master, indent=2))
        self.master = Daemon("master", self.cli("master", "-c", str(self.master_conf)), logs / "master.out")
        self.master.start()
        wait_for(lambda: port_open(self.ret_port), 30, interval=0.3, what="saltpan master port")
        for minion_id in self.ids:
            conf = {
                "id": minion_id, "root_dir": str(self.minion_root(minion_id)), "master": "127.0.0.1",
                "master_port": self.ret_port, "publish_port": self.publish_port,
                "log_file": str(logs / f"{minion_id}.log"), "log_level": "warning",
                "acceptance_wait_time": 0.5, "grains": self.grains[minion_id],
            }
            path = self.scratch / f"{minion_id}.yaml"
            path.write_text(json.dumps(conf, indent=2))
            daemon = Daemon(minion_id, self.cli("minion", "-c", str(path)), logs / f"{minion_id}.out")
            daemon.start()
            self.minions.append(daemon)

        def accepted() -> bool:
            _, _, out, _ = run_cli(self.cli("key", "-c", str(self.master_conf), "-L", "--out", "json"), 30)
            keys = json.loads(out or "{}")
            if set(keys.get("minions_pre", [])):
                run_cli(self.cli("key", "-c", str(self.master_conf), "-A", "-y"), 30)
            return set(self.ids) <= set(keys.get("minions", []))

        wait_for(accepted, 90, interval=0.5, what="saltpan minion keys")
        wait_for(lambda: self.ping() == set(self.ids), 120, interval=0.5, what="saltpan minions answering")

    def ping(self) -> set[str]:
        _, _, out, _ = run_cli(self.cli("run", "-c", str(self.master_conf), "*", "test.ping", "--timeout", "3",
                                        "--out", "json", "--static"), 60)
        return {m for m, r in parse_json_output(out).items() if r is True}

    def file_caches(self, minion_id: str) -> list[Path]:
        return list(self.minion_root(minion_id).glob("var/cache/saltpan/**/files"))

    def apply(self, timeout: float = 900) -> StateRun:
        seconds, _, out, err = run_cli(self.cli("run", "-c", str(self.master_conf), "*", "state.apply",
                                                "--timeout", str(int(timeout)), "--out", "json", "--static"),
                                       timeout + 60)
        run = summarize(parse_json_output(out), self.ids, seconds)
        if run.minions != len(self.ids) and err.strip():
            run.problems.append(err.strip()[:500])
        return run


class SaltCluster(Cluster):
    name = "Salt"

    def __init__(self, scratch: Path, fleet: Fleet, ids: list[str], salt_bin: Path):
        super().__init__(scratch, fleet, ids)
        self.bin = salt_bin
        self.master_dir = scratch / "master-conf"

    def start(self) -> None:
        logs = self.scratch / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        root = self.scratch / "master"
        user = username()
        master = {
            "root_dir": str(root), "pki_dir": str(root / "pki"), "cachedir": str(root / "cache"),
            "sock_dir": str(root / "sock"), "log_file": str(logs / "master.log"), "log_level_logfile": "warning",
            "pidfile": str(root / "master.pid"), "interface": "127.0.0.1", "publish_port": self.publish_port,
            "ret_port": self.ret_port, "auto_accept": True, "user": user,
            "file_roots": {"base": [str(self.fleet.states_dir)]},
            "pillar_roots": {"base": [str(self.fleet.pillar_dir)]},
        }
        self.master_dir.mkdir(parents=True, exist_ok=True)
        (self.master_dir / "master").write_text(json.dumps(master, indent=2))
        self.master = Daemon("master", [str(self.bin / "salt-master"), "-c", str(self.master_dir), "-l", "quiet"],
                             logs / "master.out")
        self.master.start()
        wait_for(lambda: port_open(self.ret_port), 60, interval=0.3, what="Salt master port")
        for minion_id in self.ids:
            mroot = self.minion_root(minion_id)
            conf = {
                "id": minion_id, "root_dir": str(mroot), "pki_dir": str(mroot / "pki"),
                "cachedir": str(mroot / "cache"), "sock_dir": str(mroot / "sock"),
                "pidfile": str(mroot / "minion.pid"), "log_file": str(logs / f"{minion_id}.log"),
                "log_level_logfile": "warning", "master": "127.0.0.1", "master_port": self.ret_port,
                "publish_port": self.publish_port, "user": user, "grains": self.grains[minion_id],
                "acceptance_wait_time": 1,
            }
            conf_dir = self.scratch / "minion-conf" / minion_id
            conf_dir.mkdir(parents=True, exist_ok=True)
            (conf_dir / "minion").write_text(json.dumps(conf, indent=2))
            daemon = Daemon(minion_id, [str(self.bin / "salt-minion"), "-c", str(conf_dir), "-l", "quiet"],
                            logs / f"{minion_id}.out")
            daemon.start()
            self.minions.append(daemon)
        wait_for(lambda: self.ping() == set(self.ids), 240, interval=1.0, what="Salt minions answering")

    def ping(self) -> set[str]:
        _, _, out, _ = run_cli([str(self.bin / "salt"), "-c", str(self.master_dir), "*", "test.ping", "-t", "5",
                                "--out", "json", "--static"], 120)
        return {m for m, r in parse_json_output(out).items() if r is True}

    def file_caches(self, minion_id: str) -> list[Path]:
        return [self.minion_root(minion_id) / "cache" / "files"]

    def apply(self, timeout: float = 900) -> StateRun:
        seconds, _, out, err = run_cli([str(self.bin / "salt"), "-c", str(self.master_dir), "*", "state.apply",
                                        "-t", str(int(timeout)), "--out", "json", "--static"], timeout + 60)
        run = summarize(parse_json_output(out), self.ids, seconds)
        if run.minions != len(self.ids) and err.strip():
            run.problems.append(err.strip()[:500])
        return run


# -- reporting ----------------------------------------------------------------------------

def load_average() -> str:
    try:
        return " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"
