"""The security lab: a real master and real minions on 127.0.0.1, plus every kind of attacker.

* master (2 MWorkers) with pillar_roots, file_roots and a file_tree ext_pillar; a small
  ``max_pending_keys`` (key-store flooding); refusals logged at most once a second per reason
  and process (``refusal_log_interval``), so each attack can show its refusal being logged;
* accepted minions ``web01`` and ``db01`` (real daemons), ``pend01`` (a real daemon whose key
  stays pending), ``rej01`` (a real daemon whose key is rejected), and ``mitm01`` (a real
  daemon that reaches the master through a :class:`FakeMaster` relay, actor A2);
* ``rogue01``: a hand-driven client holding a real accepted key (actor A1);
* ``probe01``: a hand-driven honest minion whose requests the guard times during each attack
  (``tests/security/probe.py``);
* a publisher_acl user (a throwaway local user, when the suite runs as root; actor A3);
* canaries: a file next to the roots, each minion's pillar (sls and ext_pillar), the master's
  client keys and private key.

Everything is torn down by :meth:`Lab.stop` (daemons, fake master, sockets).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runtime.crypt.identity import public_from_pem
from tests.integration.cluster import Cluster, children_of, wait_for
from tests.integration.rogue import Rogue
from tests.security.canary import Canaries, new_canary
from tests.security.fakemaster import FakeMaster

ACCEPTED = ("web01", "db01")
VICTIM = "mitm01"          # reaches the master through the fake master (A2 sits on its path)
PENDING = "pend01"
REJECTED = "rej01"
ROGUE = "rogue01"
PROBE = "probe01"          # an honest minion driven by hand: its requests' latency under each attack
BIG_FILE = "big.bin"       # 4 MiB in file_roots: the unread-file-chunks flood asks for it
WORKERS = 2
REFUSAL_LOG_INTERVAL = 1.0
MAX_PENDING = 40
HEIR_PREFIX = "heir"       # ids whose pillar echoes their grains (tests of ids re-used under a new key)
# minions with a pillar canary (the rogue is the attacker: its own pillar is its to read)
PILLAR_OWNERS = (*ACCEPTED, VICTIM, PENDING, REJECTED)

# Pillar sls files an author (A4) could write; rendered for the rogue only.  Each must fail to
# render (or render harmlessly) and reveal nothing.
INJECTION_SLS = {
    "mro": "x: {{ ''.__class__.__mro__ }}\n",
    "subclasses": "x: {{ ''.__class__.__mro__[1].__subclasses__() }}\n",
    "cycler": "x: {{ cycler.__init__.__globals__ }}\n",
    "lipsum": "x: {{ lipsum.__globals__['os'].popen('id').read() }}\n",
    "joiner": "x: {{ joiner.__init__.__globals__.__builtins__ }}\n",
    "namespace": "x: {{ namespace.__init__.__globals__ }}\n",
    "selfref": "x: {{ self._TemplateReference__context }}\n",
    "format": "x: {{ '{0.__class__.__base__.__subclasses__}'.format('') }}\n",
    "formatmap": "x: {{ '{a.__class__}'.format_map({'a': ''}) }}\n",
    "attrfilter": "x: {{ ''|attr('__class__')|attr('__mro__') }}\n",
    "getattr_item": "x: {{ ''['__class__'] }}\n",
    "globals": "x: {{ self.__init__.__globals__ }}\n",
    "request": "x: {{ request.application.__globals__.__builtins__ }}\n",
    "config": "x: {{ config.__class__.__init__.__globals__['os'] }}\n",
    "salt_internals": "x: {{ salt.__class__.__init__.__globals__ }}\n",
    "pillar_internals": "x: {{ pillar.__class__.__mro__ }}\n",
    "yaml_apply": "x: !!python/object/apply:os.system ['touch {marker}']\n",
    "yaml_name": "x: !!python/name:os.system\n",
    "yaml_new": "x: !!python/object/new:subprocess.check_output [['id']]\n",
    "include_outside": "{% include '../secret.sls' %}\n",
    "import_outside": "{% import_text '../secret.txt' as s %}\nx: {{ s }}\n",
    "import_absolute": "{% import_yaml '{secret_sls}' as s %}\nx: {{ s }}\n",
}


@dataclass
class PingResult:
    ok: bool
    seconds: float
    jid: str | None
    error: str = ""


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(RSS in KiB, open file descriptors) of a live process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return rss, fds


class Lab:
    def __init__(self, user: str | None = None):
        # under /tmp and 0755 (not pytest's private tmp) so the publisher_acl user can read the
        # master config and reach its client key; the secrets inside stay 0600/0700
        self.base = Path(tempfile.mkdtemp(prefix="sp-sec-", dir="/tmp"))
        self.base.chmod(0o755)
        self.user = user
        self.canaries = Canaries()
        self.roots = self.base / "roots"
        self.marker = self.base / "yaml-marker"        # must never be created
        self._write_trees()
        self.cl = Cluster(self.base, pillar_roots={"base": [str(self.roots / "pillar")]},
                          file_roots={"base": [str(self.roots / "states")]},
                          master_opts=self._master_opts())
        self.fake: FakeMaster | None = None
        self.rogue: Rogue | None = None
        self.probe_minion: Rogue | None = None
        self.opts: dict[str, Any] = {}
        self.master_pub: bytes = b""

    # -- trees and canaries ---------------------------------------------------------------
    def _write_trees(self) -> None:
        pillar, states, ext = self.roots / "pillar", self.roots / "states", self.roots / "ext"
        for d in (pillar / "secrets", pillar / "inject", states / "sub", ext / "hosts"):
            d.mkdir(parents=True, exist_ok=True)
        outside = new_canary("outside")
        self.canaries.add("outside-file", outside)
        # next to the roots: reachable only by ../ tricks, symlinks or absolute paths
        (self.roots / "secret.txt").write_text(f"{outside}\n")
        (self.roots / "secret.sls").write_text(f"leaked: {outside}\n")
        os.symlink(self.roots / "secret.txt", states / "link-out.txt")
        os.symlink("../../secret.txt", states / "sub" / "rel-out.txt")
        os.symlink(self.roots, states / "dir-out")
        (states / "hello.txt").write_text("hello\n")
        (states / BIG_FILE).write_bytes(os.urandom(4 * 1024 * 1024))
        (states / "sub" / "nested.txt").write_text("nested\n")
        (states / "top.sls").write_text("base: {}\n")
        top = ["base:", "  '*':", "    - common"]
        for minion_id in PILLAR_OWNERS:
            secret = new_canary(f"pillar-{minion_id}")
            ext_secret = new_canary(f"ext-{minion_id}")
            self.canaries.add(f"pillar:{minion_id}", secret)
            self.canaries.add(f"ext_pillar:{minion_id}", ext_secret)
            (pillar / "secrets" / f"{minion_id}.sls").write_text(f"secret: {secret}\n")
            top += [f"  '{minion_id}':", f"    - secrets.{minion_id}"]
            (ext / "hosts" / minion_id).mkdir()
            (ext / "hosts" / minion_id / "ext_secret").write_text(ext_secret)
        top += [f"  '{ROGUE}':", "    - rogue_own", "    - race", "    - paste"] + [
            f"    - inject.{name}" for name in INJECTION_SLS]
        # ids re-used under a new key (identity leftovers): their pillar shows the grains it was compiled with
        top += [f"  '{HEIR_PREFIX}*':", "    - echo_grains"]
        # ids that do not start with a letter or digit (YAML or Jinja syntax): their pillar pastes the id
        top += ["  '^[^A-Za-z0-9]':", "    - match: pcre", "    - hostid"]
        (pillar / "hostid.sls").write_text("host: {{ grains['id'] }}\n")
        (pillar / "echo_grains.sls").write_text("owner: {{ grains.get('owner', 'nobody') }}\n")
        (pillar / "top.sls").write_text("\n".join(top) + "\n")
        (pillar / "common.sls").write_text("common: shared\n")
        (pillar / "rogue_own.sls").write_text("rogue_own: mine\n")
        (pillar / "race.sls").write_text("race: inside\n")     # swapped for a symlink by the file-race attacks
        # a template pasting a grain as YAML (as careless trees do): the alias-bomb attacks use it
        (pillar / "paste.sls").write_text("paste: {{ grains.get('paste', 'none') }}\n")
        for name, text in INJECTION_SLS.items():
            text = text.replace("{marker}", str(self.marker)).replace("{secret_sls}", str(self.roots / "secret.sls"))
            (pillar / "inject" / f"{name}.sls").write_text(text)
        for path in [self.roots, *self.roots.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o700 if path.is_dir() else 0o600)

    def _master_opts(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "worker_threads": WORKERS,
            "max_pending_keys": MAX_PENDING,
            "refusal_log_interval": REFUSAL_LOG_INTERVAL,
            "ext_pillar": [{"file_tree": {"root_dir": str(self.roots / "ext")}}],
            "keep_jobs": 24,
            "nodegroups": {"webs": "web*"},
        }
        if self.user:
            opts["publisher_acl"] = {self.user: ["test.ping", {"web*": ["test.echo"]}]}
        return opts

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> Lab:
        import atexit

        atexit.register(self.stop)   # whatever ends this process, the daemons go with it
        cl = self.cl
        for minion_id in ACCEPTED:
            # db01's own config defines the nodegroup "webs" more broadly than the master does
            # (a copied or stale config): targets must still be decided by what the master checked
            cl.add_minion(minion_id, {"role": "web" if minion_id.startswith("web") else "db"},
                          refusal_log_interval=REFUSAL_LOG_INTERVAL,
                          nodegroups={"webs": "*"} if minion_id == "db01" else {"webs": "web*"})
        cl.add_minion(PENDING, acceptance_wait_time=2.0, refusal_log_interval=REFUSAL_LOG_INTERVAL)
        cl.add_minion(REJECTED, recon_default=1000, recon_max=2000, recon_randomize=False,   # ms, as in Salt
                      refusal_log_interval=REFUSAL_LOG_INTERVAL)
        cl.start_master()
        self.opts = cl.opts()
        master_pem_pub = Path(self.opts["pki_dir"]) / "master.pub"
        self.master_pub = public_from_pem(master_pem_pub.read_bytes(), str(master_pem_pub))
        self.fake = FakeMaster(cl.ret_port, cl.publish_port, self.master_pub).start()
        cl.add_minion(VICTIM, master_port=self.fake.ret_port, publish_port=self.fake.pub_port,
                      refusal_log_interval=REFUSAL_LOG_INTERVAL)
        cl.start_minions()
        wait_for(lambda: set(cl.keys()["minions_pre"]) >= {*ACCEPTED, VICTIM, PENDING, REJECTED}, 30,
                 what="every minion's key pending")
        assert cl.key("-a", ",".join((*ACCEPTED, VICTIM)), "-y").returncode == 0
        assert cl.key("-r", REJECTED, "-y").returncode == 0
        self.rogue = Rogue(ROGUE, cl.ret_port, cl.publish_port)
        assert self.rogue.auth().outcome == "pending"
        assert cl.key("-a", ROGUE, "-y").returncode == 0
        assert self.rogue.auth().outcome == "accepted"
        self.probe_minion = Rogue(PROBE, cl.ret_port, cl.publish_port)
        assert self.probe_minion.auth().outcome == "pending"
        assert cl.key("-a", PROBE, "-y").returncode == 0
        assert self.probe_minion.auth().outcome == "accepted"
        self._plant_key_canaries()
        cl.wait_ping([*ACCEPTED, VICTIM], timeout=60)
        return self

    def _plant_key_canaries(self) -> None:
        cachedir = Path(self.opts["cachedir"])
        for key_file in cachedir.glob(".*_key"):
            text = key_file.read_text().strip()
            self.canaries.add(f"client key {key_file.name}", text, bytes.fromhex(text))
        pem = (Path(self.opts["pki_dir"]) / "master.pem").read_text()
        body = "".join(line for line in pem.splitlines() if "-----" not in line)
        self.canaries.add("master.pem", body)

    def ensure_rogue(self) -> None:
        """Re-authenticate the rogue when the master expired its idle session (it sends no
        heartbeats of its own between attacks)."""
        from runtime.crypt.errors import RemoteRefusal
        from runtime.transport import RequestTimeout

        assert self.rogue is not None
        for attempt in range(5):   # after a flood by rogue01 itself, its own flow may still be behind
            try:
                self.rogue.request({"cmd": "_heartbeat", "epoch": 0})
                return
            except RemoteRefusal:
                assert self.rogue.auth().outcome == "accepted"
                return
            except RequestTimeout:
                if attempt == 4:
                    raise

    def stop(self) -> None:
        """Stop every daemon (each one even if another fails to stop); safe to call twice."""
        for hand_driven in (self.rogue, self.probe_minion):
            if hand_driven is not None:
                hand_driven.close()
        self.rogue = self.probe_minion = None
        for daemon in [*self.cl.minions.values(), self.cl.master]:
            try:
                daemon.stop()
            except BaseException:  # noqa: BLE001 - keep stopping the others
                daemon.signal(9)
        shutil.rmtree(self.cl.sock_dir, ignore_errors=True)
        if self.fake is not None:
            self.fake.close()
            self.fake = None

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- facts about the running system ----------------------------------------------------
    @property
    def master_pid(self) -> int:
        assert self.cl.master.proc is not None
        return self.cl.master.proc.pid

    def master_processes(self) -> dict[int, str]:
        procs = {self.master_pid: "master"}
        procs.update(children_of(self.master_pid))
        return procs

    def sock_dir(self) -> str:
        return str(self.opts["sock_dir"])

    def minion_pids(self) -> dict[str, int]:
        return {m: d.proc.pid for m, d in self.cl.minions.items() if d.proc is not None and d.alive()}

    def log_files(self) -> list[Path]:
        return sorted(p for p in self.base.iterdir() if p.suffix in (".log", ".out"))

    def key_store(self) -> dict[str, bytes]:
        pki = Path(self.opts["pki_dir"])
        return {str(p.relative_to(pki)): p.read_bytes() for p in sorted(pki.rglob("*")) if p.is_file()}

    def keys(self) -> dict[str, list[str]]:
        return self.cl.keys()

    # -- the legit round trip --------------------------------------------------------------
    def ping(self, minion_id: str = "web01", timeout: float = 3.0) -> PingResult:
        from runtime.client import ClientError, LocalClient

        started = time.monotonic()
        try:
            with LocalClient(self.opts, timeout=timeout) as client:   # its kept sockets closed now, not at GC
                result = client.cmd([minion_id], "test.ping", tgt_type="list", timeout=timeout, check_running=False)
        except (ClientError, OSError) as exc:
            return PingResult(False, time.monotonic() - started, None, str(exc))
        ret = result.returns.get(minion_id) or {}
        return PingResult(ret.get("return") is True, time.monotonic() - started, result.jid,
                          "" if ret else f"no return from {minion_id}")

    def run_as_user(self, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run Python ``code`` as the throwaway publisher_acl user (cwd /, saltpan importable)."""
        python, path = self.user_python()
        return self._as_user([python, "-c", code], path, timeout)

    def _as_user(self, argv: list[str], pythonpath: str, timeout: float) -> subprocess.CompletedProcess:
        from tests.userpython import run_as

        assert self.user is not None
        return run_as(self.user, argv, pythonpath, timeout, {"LAB_MASTER_CONF": str(self.cl.master_conf)})

    def user_python(self) -> tuple[str, str]:
        """An interpreter the throwaway user may run and the PYTHONPATH giving it saltpan."""
        from tests.userpython import python_for

        assert self.user is not None
        found = python_for(self.user)
        if found is None:
            raise RuntimeError(f"no Python that user {self.user} may run exists on this host")
        return found

    def write_conf_copy(self) -> dict[str, Any]:
        return yaml.safe_load(self.cl.master_conf.read_text())


def data_cache_writes(lab: Lab) -> list[str]:
    """Glob (relative to the lab) of the master's minion data cache, which a minion's own
    ``_grains``/``_pillar`` request legitimately updates."""
    cachedir = Path(lab.opts["cachedir"]).relative_to(lab.base)
    return [f"{cachedir}/minion_data.sqlite*"]


def cached(lab: Lab, minion_id: str, bank: str) -> Any:
    """What the master's data cache holds for a minion (read-only)."""
    import json
    import sqlite3

    path = Path(lab.opts["cachedir"]) / "minion_data.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
        row = conn.execute("SELECT value FROM data WHERE minion=? AND bank=?", (minion_id, bank)).fetchone()
    return json.loads(row[0]) if row else None


def publish(lab: Lab, tgt: Any, fun: str, arg: list | None = None, tgt_type: str = "glob") -> str:
    """Publish a legit job as the master's user (without waiting); its jid."""
    from runtime.client import LocalClient

    return LocalClient(lab.opts).publish(tgt, fun, arg or [], tgt_type=tgt_type).jid


def wait_return(lab: Lab, jid: str, minion_id: str, timeout: float = 15) -> Any:
    from runtime.master.store.sqlite_jobs import SQLiteJobCache

    def got() -> Any:
        cache = SQLiteJobCache(lab.opts["cachedir"])
        try:
            return cache.returns(jid).get(minion_id)
        finally:
            cache.close()

    return wait_for(got, timeout, what=f"{minion_id}'s return for {jid}")


def minion_opts(lab: Lab, minion_id: str) -> dict[str, Any]:
    from runtime import config

    return config.load(str(lab.cl.minion_confs[minion_id]), "minion")
