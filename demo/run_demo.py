"""`make demo`: saltpan on the shipped trees (pillar_roots/, state_roots/, demo/fleet.yaml).

Each stage is a function that runs real `saltpan` commands, prints what it
runs and what they print, and returns True when every command succeeded.
STAGES lists them in order; the demo stops at the first stage that fails and
exits non-zero.  Commands run with a timeout, so nothing is left running.

Stages:
  1. compile the pillar of a web and a database minion, offline
  2. apply the state tree masterless for web01, into a sandbox under a temp
     directory, then apply it again: the second run changes nothing
  3. a master and three minions (web01, db01, lb01) on 127.0.0.1 with free
     ports: accept their keys, run test.ping and state.apply through the
     master, then stop every daemon

To add a stage, write a function `stage_<name>(demo: Demo) -> bool` and append
it to STAGES.  A stage that starts daemons must stop them in a `finally:`.
Everything the demo writes goes to one temp directory, removed at the end.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLEET_FILE = os.path.join(REPO, "demo", "fleet.yaml")
COMMAND_TIMEOUT = 120.0
NODEGROUPS = {"frontends": "G@role:web or G@role:lb"}  # as the shipped config (runtime/config.py)
PLANE_MINIONS = ("web01", "db01", "lb01")


class Demo:
    """Runs saltpan commands for the stages and prints them as a user would type them."""

    def __init__(self, saltpan: Sequence[str], workdir: str | None = None):
        self.saltpan = list(saltpan)
        self._workdir = workdir

    @property
    def workdir(self) -> str:
        """The demo's temp directory (made on first use; main() removes it)."""
        if self._workdir is None:
            self._workdir = os.path.realpath(tempfile.mkdtemp(prefix="saltpan-demo-"))
        return self._workdir

    def quiet(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess | None:
        """Run `saltpan ARGS` for the demo's own bookkeeping (output captured, not shown)."""
        try:
            return subprocess.run([*self.saltpan, *args], cwd=REPO, timeout=timeout, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, check=False)
        except (subprocess.TimeoutExpired, OSError):
            return None

    def heading(self, title: str) -> None:
        print(f"\n{'=' * 78}\n{title}\n{'=' * 78}", flush=True)

    def saltpan_cmd(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> bool:
        """Run `saltpan ARGS`, its output going straight to ours; True when it exits 0."""
        print(f"\n$ saltpan {shlex.join(args)}", flush=True)
        try:
            proc = subprocess.run([*self.saltpan, *args], cwd=REPO, timeout=timeout, stdin=subprocess.DEVNULL,
                                  check=False)
        except subprocess.TimeoutExpired:
            print(f"demo: `saltpan {shlex.join(args)}` did not finish within {timeout:.0f} s", file=sys.stderr)
            return False
        except OSError as exc:
            print(f"demo: cannot run saltpan ({self.saltpan[0]}): {exc.strerror}", file=sys.stderr)
            return False
        if proc.returncode != 0:
            print(f"demo: `saltpan {shlex.join(args)}` exited with status {proc.returncode}", file=sys.stderr)
            return False
        return True


def stage_compile_pillar(demo: Demo) -> bool:
    """Pillar for two minions of demo/fleet.yaml, compiled offline from pillar_roots/."""
    ok = True
    for minion_id, what in (("web01", "a web server (glob web*, nodegroup frontends)"),
                            ("db01", "a database server (grain role:db; its secrets come from an include)")):
        demo.heading(f"Pillar of {minion_id}, {what}")
        ok = demo.saltpan_cmd("compile", "--minion", minion_id, "--show", "pillar") and ok
    return ok


def load_fleet() -> dict[str, dict[str, Any]]:
    import yaml

    with open(FLEET_FILE, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def minion_config(minion_id: str, base: str, **extra: Any) -> dict[str, Any]:
    """A minion config for a fleet minion: its grains (with the sandbox moved under ``base``), the
    shipped trees, every runtime path under ``base``."""
    grains = dict(load_fleet()[minion_id])
    grains["sandbox"] = os.path.join(base, "sandbox", minion_id)
    config = {
        "id": minion_id,
        "grains": grains,
        "pillar_roots": {"base": [os.path.join(REPO, "pillar_roots")]},
        "file_roots": {"base": [os.path.join(REPO, "state_roots")]},
        "nodegroups": NODEGROUPS,
        "root_dir": os.path.join(base, minion_id),
        "log_file": os.path.join(base, f"{minion_id}.log"),
    }
    config.update(extra)
    return config


def write_config(path: str, config: dict[str, Any]) -> str:
    import yaml

    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(config, fh, default_flow_style=False)
    return path


def stage_apply_masterless(demo: Demo) -> bool:
    """web01's highstate applied with `saltpan call --local`, twice: the second run changes nothing."""
    base = os.path.join(demo.workdir, "masterless")
    os.makedirs(base)
    conf = write_config(os.path.join(base, "minion"), minion_config("web01", base, file_client="local",
                                                                     state_verbose=False))
    sandbox = os.path.join(base, "sandbox", "web01")
    demo.heading(f"Masterless: web01's states applied into the sandbox {sandbox}\n"
                 "(config: its fleet grains, file_client: local, the shipped trees; state_verbose: False shows "
                 "only the states that changed)")
    if not demo.saltpan_cmd("call", "-c", conf, "--local", "state.apply"):
        return False
    files = sorted(os.path.relpath(os.path.join(d, f), sandbox) for d, _, fs in os.walk(sandbox) for f in fs)
    print(f"\n{len(files)} files now in the sandbox, e.g. {', '.join(files[:4])}")
    demo.heading("Masterless, the same apply again: every state is already in place, nothing changes")
    return demo.saltpan_cmd("call", "-c", conf, "--local", "state.apply")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Daemons:
    """The master and minion processes of stage 3; stop() ends every one of them."""

    def __init__(self, demo: Demo):
        self.demo = demo
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, role: str, conf: str, log_path: str) -> None:
        print(f"$ saltpan {role} -c {conf} &", flush=True)
        with open(log_path, "ab") as out:
            self.procs[name] = subprocess.Popen([*self.demo.saltpan, role, "-c", conf], cwd=REPO,
                                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def alive(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def stop(self, timeout: float = 10.0) -> list[str]:
        """SIGTERM every daemon (the master stops its children), SIGKILL what is left; returns the
        names of the daemons that did not exit 0."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        unclean = [name for name, proc in self.procs.items() if proc.poll() != 0]
        for proc in self.procs.values():  # the whole process group: the master's children too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        return unclean


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


def stage_master_and_minions(demo: Demo) -> bool:
    """A master and three minions on loopback: keys, test.ping, state.apply, then stop them all."""
    base = os.path.join(demo.workdir, "plane")
    os.makedirs(base)
    publish_port, ret_port = free_port(), free_port()
    master_conf = write_config(os.path.join(base, "master.conf"), {
        "interface": "127.0.0.1", "publish_port": publish_port, "ret_port": ret_port, "worker_threads": 2,
        "root_dir": os.path.join(base, "master"), "log_file": os.path.join(base, "master.log"),
        "pillar_roots": {"base": [os.path.join(REPO, "pillar_roots")]},
        "file_roots": {"base": [os.path.join(REPO, "state_roots")]},
        "nodegroups": NODEGROUPS, "heartbeat_period": 1.0, "state_verbose": False,
    })
    daemons = Daemons(demo)
    demo.heading(f"A master and three minions on 127.0.0.1 (publish_port {publish_port}, ret_port {ret_port}); "
                 f"files under {base}")
    try:
        daemons.start("master", "master", master_conf, os.path.join(base, "master.out"))
        if not wait_until(lambda: port_open(ret_port) and port_open(publish_port), 30):
            print("demo: the master did not open its ports within 30 s (see master.log)", file=sys.stderr)
            return False
        for minion_id in PLANE_MINIONS:
            conf = write_config(os.path.join(base, f"{minion_id}.conf"), minion_config(
                minion_id, base, master="127.0.0.1", master_port=ret_port, publish_port=publish_port,
                acceptance_wait_time=0.5, recon_default=200, recon_max=2000))
            daemons.start(minion_id, "minion", conf, os.path.join(base, f"{minion_id}.out"))

        def keys() -> dict[str, list[str]]:
            proc = demo.quiet("key", "-c", master_conf, "-L", "--out", "json")
            return json.loads(proc.stdout) if proc is not None and proc.returncode == 0 else {}

        if not wait_until(lambda: set(PLANE_MINIONS) <= set(keys().get("minions_pre", [])), 60):
            print("demo: the minions' keys did not reach the master within 60 s", file=sys.stderr)
            return False
        demo.heading("The minions' keys wait for acceptance; accept them all")
        ok = demo.saltpan_cmd("key", "-c", master_conf, "-L") and demo.saltpan_cmd("key", "-c", master_conf, "-A",
                                                                                      "-y")

        def up() -> bool:
            proc = demo.quiet("minions", "-c", master_conf, "--status", "--out", "json")
            return proc is not None and proc.returncode == 0 and \
                set(PLANE_MINIONS) <= set(json.loads(proc.stdout).get("up", []))

        if not ok or not wait_until(up, 60):
            print("demo: the minions did not come up within 60 s", file=sys.stderr)
            return False
        demo.heading("test.ping through the master")
        ok = demo.saltpan_cmd("run", "-c", master_conf, "*", "test.ping", "--timeout", "30")
        demo.heading("state.apply through the master: each minion applies its highstate into its sandbox\n"
                     "(the master's state_verbose: False shows only the states that changed)")
        return demo.saltpan_cmd("run", "-c", master_conf, "*", "state.apply", "--timeout", "120",
                                timeout=300) and ok
    finally:
        names = ", ".join(daemons.procs)
        unclean = daemons.stop()
        left = daemons.alive()
        print(f"\nstopped {names}" + (f"; did not exit cleanly: {', '.join(unclean)}" if unclean else
                                       " (each exited 0 on SIGTERM)"), flush=True)
        if left:
            print(f"demo: still running after stop: {', '.join(left)}", file=sys.stderr)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


STAGES: list[Callable[[Demo], bool]] = [
    stage_compile_pillar,
    stage_apply_masterless,
    stage_master_and_minions,
]


def find_saltpan() -> list[str]:
    """The saltpan console script beside this Python (the venv's), else `python -m runtime`."""
    script = os.path.join(os.path.dirname(sys.executable), "saltpan")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "runtime"]


def main() -> int:
    demo = Demo(find_saltpan())
    print("saltpan demo: the shipped trees in pillar_roots/ and state_roots/, the minions of demo/fleet.yaml")
    try:
        for stage in STAGES:
            if not stage(demo):
                print(f"\ndemo: FAILED in {stage.__name__}", file=sys.stderr)
                return 1
    finally:
        if demo._workdir is not None:
            shutil.rmtree(demo._workdir, ignore_errors=True)
    print(f"\ndemo: all {len(STAGES)} stage(s) succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
