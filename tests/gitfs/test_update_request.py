"""The `fileserver_update` request, answered by a master worker in this process: the master's user only,
Salt's backend=, each remote's result in the reply, a replayed proof refused; and the command line around it."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
import zmq

from runtime import codec, protocol, transport
from runtime.crypt.clientkey import client_key_path, load_or_create_client_key, make_proof
from runtime.crypt.identity import Identity
from runtime.events import EVENT_PULL
from runtime.master import worker as worker_mod
from runtime.master.store.sqlite_sessions import SQLiteSessionStore
from tests.netutil import free_port

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MasterWorker:
    def __init__(self, base: Path, opts: dict[str, Any]):
        self.sock_dir = tempfile.mkdtemp(prefix="spfu-", dir="/tmp")
        self.opts = {"sock_dir": self.sock_dir, "pki_dir": str(base / "pki"), "cachedir": str(base / "cache"),
                     "refusal_log_interval": 3600, "id": "master", **opts}
        self.ctx = zmq.Context()
        self.sinks = []
        for name in (worker_mod.PUBLISH_PULL, EVENT_PULL):
            sink = transport.make_socket(self.ctx, zmq.PULL)
            transport.bind(sink, transport.ipc_address(self.sock_dir, name))
            self.sinks.append(sink)
        store = SQLiteSessionStore.in_sock_dir(self.sock_dir)
        store.reset()
        store.close()
        self.worker = worker_mod.Worker(self.opts, Identity.generate(), self.ctx)
        self.events: list[tuple[str, dict]] = []

    def request(self, user: str, query: protocol.UpdateQuery, proof: dict | None = None) -> dict[str, Any]:
        key = load_or_create_client_key(client_key_path(self.opts["cachedir"], user))
        body = query.encode()
        proof = proof or make_proof(key, user, body)
        load = {"cmd": "fileserver_update", "body": body, "proof": proof}
        reply = self.worker.handle("127.0.0.1", codec.pack_envelope(codec.ENC_CLEAR, load))
        self._drain()
        return codec.unpack_envelope(reply).load

    def _drain(self) -> None:
        sink = self.sinks[1]
        while sink.poll(200, zmq.POLLIN):
            tag, data = sink.recv_multipart()
            self.events.append((tag.decode(), codec.unpack(data)))

    def close(self) -> None:
        self.worker.close()
        for sink in self.sinks:
            sink.close(linger=0)
        self.ctx.term()


def me() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


@pytest.fixture
def master(tmp_path, repos) -> Iterator[MasterWorker]:
    served = MasterWorker(tmp_path, {
        "fileserver_backend": ["roots", "gitfs"], "file_roots": {"base": [str(tmp_path / "roots")]},
        "gitfs_remotes": [{repos["states"]: [{"root": "salt"}]}, f"git://127.0.0.1:{free_port()}/gone.git"],
        "ext_pillar": [{"git": [f"__env__ {repos['pillar']}"]}], "fileserver_events": True,
    })
    try:
        yield served
    finally:
        served.close()


def test_the_masters_user_updates_and_gets_each_remotes_result(master: MasterWorker, repos) -> None:
    load = master.request(me(), protocol.UpdateQuery(backends=["gitfs"], remotes=[]))
    reply = protocol.FileserverUpdateReply.from_wire(load)
    assert reply.changed is True and reply.backends == ["gitfs"]
    good, gone = reply.remotes
    assert (good.backend, good.remote, good.ok, good.changed) == ("gitfs", repos["states"], True, True)
    assert gone.ok is False and gone.error and "gone.git" in gone.remote
    assert not os.path.isdir(os.path.join(master.opts["cachedir"], "git_pillar"))  # only what was asked
    ((tag, data),) = master.events
    assert tag == "salt/fileserver/gitfs/update" and data["changed"] is True and data["backend"] == "gitfs"
    assert len(data["errors"]) == 1 and data["errors"][0].startswith(f"gitfs remote '{gone.remote}': fetch failed")
    pillar = protocol.FileserverUpdateReply.from_wire(
        master.request(me(), protocol.UpdateQuery(backends=["git_pillar"], remotes=[])))
    assert [(r.backend, r.ok) for r in pillar.remotes] == [("git_pillar", True)]
    assert len(master.events) == 1  # git_pillar updates fire no gitfs event
    filtered = protocol.FileserverUpdateReply.from_wire(
        master.request(me(), protocol.UpdateQuery(backends=[], remotes=["*states*"])))
    assert [r.remote for r in filtered.remotes] == [repos["states"]] and filtered.changed is False


def test_refusals_other_users_bad_backends_replays(master: MasterWorker) -> None:
    other = master.request("alice", protocol.UpdateQuery(backends=[], remotes=[]))
    assert other["error"]["reason"] == "acl" and "only the master's user" in other["error"]["message"]
    bad = master.request(me(), protocol.UpdateQuery(backends=["hgfs"], remotes=[]))
    assert bad["error"] == {"reason": "bad_backend", "message": "backend hgfs is not configured on this master "
                                                                "(configured: roots, gitfs, git_pillar)"}
    key = load_or_create_client_key(client_key_path(master.opts["cachedir"], me()))
    query = protocol.UpdateQuery(backends=["roots"], remotes=[])
    proof = make_proof(key, me(), query.encode())
    assert master.request(me(), query, proof) == {"changed": False, "backends": ["roots"], "remotes": []}
    assert master.request(me(), query, proof)["error"]["reason"] == "replayed"
    garbage = master.worker.handle("127.0.0.1", codec.pack_envelope(codec.ENC_CLEAR, {
        "cmd": "fileserver_update", "body": codec.pack([1, 2]), "proof": make_proof(key, me(), codec.pack([1, 2]))}))
    assert codec.unpack_envelope(garbage).load["error"]["reason"] == "bad_backend"


def saltpan(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PROJECT, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "runtime", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=PROJECT)


def test_the_command_line(tmp_path, repos) -> None:
    port = free_port()
    config = tmp_path / "master"
    config.write_text(yaml.safe_dump({
        "root_dir": str(tmp_path / "root"), "ret_port": port, "fileserver_backend": ["gitfs"],
        "gitfs_remotes": [{repos["states"]: [{"root": "salt"}]}]}))
    down = saltpan("fileserver", "update", "backend=gitfs", "-c", str(config))
    assert down.returncode == 2
    assert f"saltpan fileserver: the master is not running: nothing answers on 127.0.0.1:{port}" in down.stderr
    unknown = saltpan("fileserver", "update", "-c", str(config), "bakend=gitfs")
    assert unknown.returncode == 2 and "unknown argument 'bakend' (valid: backend, remotes)" in unknown.stderr
    # envs and file_list read the clones here, as salt-run does: nothing fetched yet, then fetched
    empty = saltpan("fileserver", "envs", "-c", str(config), "--out", "json")
    assert empty.returncode == 0 and empty.stdout.strip() == "[]" and "has not been fetched yet" in empty.stderr
    assert saltpan("compile", "-c", str(config), "-m", "x", "--fetch", "--show", "top").returncode == 0
    envs = saltpan("fileserver", "envs", "-c", str(config))
    assert envs.stdout.split() == ["-", "base", "-", "dev", "-", "v1.0"]
    files = saltpan("fileserver", "file_list", "saltenv=dev", "backend=gitfs", "-c", str(config), "--out", "json")
    assert "web/init.sls" in yaml.safe_load(files.stdout)
    nothing = saltpan("fileserver", "file_list", "saltenv=nosuch", "-c", str(config), "--out", "json")
    assert nothing.returncode == 0 and yaml.safe_load(nothing.stdout) == []
