"""Issue 6: what a client holding a real accepted key can get from the master, and what it cannot.

The rogue speaks the minion protocol itself (tests/integration/rogue.py): its requests are
authentic, so the master's only defence is acting for the id bound to the session and keeping
every path inside file_roots.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.crypt.errors import RemoteRefusal
from tests.integration.cluster import Cluster, wait_for
from tests.integration.rogue import Rogue

CANARY = "CANARY-" + secrets.token_hex(8)
OUTSIDE = "OUTSIDE-" + secrets.token_hex(8)


def build_trees(base: Path) -> None:
    pillar, states, dev, outside = base / "pillar", base / "states", base / "states-dev", base / "outside"
    for d in (pillar, states, dev, outside, states / "sub"):
        d.mkdir(parents=True, exist_ok=True)
    (pillar / "top.sls").write_text("base:\n  '*':\n    - common\n  'db01':\n    - dbsecret\n"
                                    "  'rogue':\n    - rogueown\n")
    (pillar / "common.sls").write_text("common: shared\n")
    (pillar / "dbsecret.sls").write_text(f"db_password: {CANARY}\n")
    (pillar / "rogueown.sls").write_text("rogue_own: mine\n")
    (states / "top.sls").write_text("base: {}\n")
    (states / "hello.txt").write_text("hello from the master\n")
    (states / "sub" / "nested.txt").write_text("nested\n")
    (dev / "devonly.txt").write_text("dev\n")
    (outside / "secret.txt").write_text(OUTSIDE + "\n")
    (base / "pillar-secret.sls").write_text(f"leak: {CANARY}\n")
    os.symlink(outside / "secret.txt", states / "leak.txt")
    os.symlink(outside, states / "leakdir")
    os.symlink("../outside/secret.txt", states / "sub" / "relleak.txt")
    os.symlink(states / "hello.txt", states / "inside-link.txt")  # a symlink inside the root is fine


class RogueClient:
    """A Rogue (a real key, accepted with `saltpan key`) whose refusals come back as data."""

    def __init__(self, cl: Cluster, minion_id: str):
        self.rogue = Rogue(minion_id, cl.ret_port, cl.publish_port)
        assert self.rogue.auth().outcome == "pending"
        assert cl.key("-a", minion_id, "-y").returncode == 0
        wait_for(lambda: self.rogue.auth().outcome == "accepted", 10, what=f"{minion_id} accepted")

    def request(self, payload: dict[str, Any], heartbeat: bool = False) -> Any:
        """The opened reply; a clear refusal as {"error": {...}, "clear": True}."""
        try:
            return self.rogue.request(payload, heartbeat)
        except RemoteRefusal as exc:
            return {"error": {"reason": exc.reason, "message": str(exc)}, "clear": True}

    def close(self) -> None:
        self.rogue.close()


@pytest.fixture(scope="module")
def fcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, RogueClient]]:
    base = tmp_path_factory.mktemp("forged")
    build_trees(base)
    cl = Cluster(base, file_roots={"base": [str(base / "states")], "dev": [str(base / "states-dev")]})
    cl.add_minion("db01")
    with cl.running():
        rogue = RogueClient(cl, "rogue")
        try:
            yield cl, rogue
        finally:
            rogue.close()


def leaked(reply: Any) -> bool:
    text = json.dumps(reply, default=lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b))
    return CANARY in text or OUTSIDE in text


def is_error(reply: Any, reason: str | None = None) -> bool:
    return isinstance(reply, dict) and isinstance(reply.get("error"), dict) and (
        reason is None or reply["error"].get("reason") == reason)


def test_victims_pillar_is_really_there(fcluster: tuple[Cluster, RogueClient]) -> None:
    cl, _ = fcluster
    assert cl.run_json("db01", "pillar.get", "db_password") == {"db01": CANARY}


def test_own_pillar_only(fcluster: tuple[Cluster, RogueClient]) -> None:
    _, rogue = fcluster
    reply = rogue.request({"cmd": "_pillar", "grains": {"os": "Debian"}})
    assert reply == {"pillar": {"common": "shared", "rogue_own": "mine"}}


@pytest.mark.parametrize("payload", [
    {"cmd": "_pillar", "id": "db01", "grains": {}},
    {"cmd": "_pillar", "id": "db01"},
    {"cmd": "_grains", "id": "db01", "grains": {"role": "pwned"}},
    {"cmd": "_file_find", "id": "db01", "path": "hello.txt"},
])
def test_naming_another_minion_is_refused(fcluster: tuple[Cluster, RogueClient], payload: dict) -> None:
    _, rogue = fcluster
    reply = rogue.request(payload)
    assert is_error(reply, "id_mismatch"), reply
    assert "db01" not in json.dumps(reply.get("pillar", {}))
    assert not leaked(reply)


@pytest.mark.parametrize("payload", [
    # grains claiming to be the victim: the id always comes from the session
    {"cmd": "_pillar", "grains": {"id": "db01"}},
    {"cmd": "_pillar", "grains": {"id": "db01"}, "saltenv": "base", "pillarenv": "base"},
    # what Salt's _pillar load accepts to reach ext_pillar / overrides: ignored
    {"cmd": "_pillar", "grains": {}, "pillar_override": {"x": 1}, "ext": {"file": "../pillar-secret.sls"},
     "extra_minion_data": {"id": "db01"}},
    {"cmd": "_pillar", "grains": {}, "id": "rogue"},
])
def test_forged_pillar_loads_get_the_rogues_pillar(fcluster: tuple[Cluster, RogueClient], payload: dict) -> None:
    _, rogue = fcluster
    reply = rogue.request(payload)
    assert not leaked(reply), reply
    assert reply == {"pillar": {"common": "shared", "rogue_own": "mine"}}


def test_victims_cached_data_untouched(fcluster: tuple[Cluster, RogueClient]) -> None:
    cl, rogue = fcluster
    rogue.request({"cmd": "_grains", "id": "db01", "grains": {"role": "pwned"}})
    rogue.request({"cmd": "_pillar", "grains": {"id": "db01", "role": "pwned"}})
    cache = Path(cl.opts()["cachedir"]) / "minion_data.sqlite"
    with sqlite3.connect(cache) as db:
        rows = {(m, b): json.loads(v) for m, b, v in db.execute("SELECT minion, bank, value FROM data")}
    assert rows[("db01", "pillar")]["db_password"] == CANARY
    assert rows[("db01", "grains")].get("role") != "pwned"
    assert rows[("rogue", "grains")]["id"] == "rogue"
    assert "db_password" not in rows[("rogue", "pillar")]
    # The master's targeting still sees db01 as it is.
    assert set(cl.run_json("-G", "role:pwned", "test.ping", "--timeout", "2")) <= {"rogue"}


def test_return_for_a_job_not_sent_to_the_rogue(fcluster: tuple[Cluster, RogueClient]) -> None:
    cl, rogue = fcluster
    proc = cl.run("db01", "test.ping", "--async")
    jid = proc.stdout.strip().rsplit(" ", 1)[-1]
    reply = rogue.request({"cmd": "_return", "jid": jid, "fun": "test.ping", "return": "forged", "id": "rogue"})
    assert is_error(reply, "not_targeted"), reply


# -- the file server, asked directly ------------------------------------------------------------

ESCAPES = [
    ("salt://../outside/secret.txt", "base"),
    ("../outside/secret.txt", "base"),
    ("sub/../../outside/secret.txt", "base"),
    ("/etc/passwd", "base"),
    ("salt:///etc/passwd", "base"),
    (f"{'x/' * 3}..\\..\\..\\outside\\secret.txt", "base"),
    ("sub\\..\\..\\outside\\secret.txt", "base"),
    ("hello.txt\x00.sls", "base"),
    ("leak.txt", "base"),
    ("salt://leak.txt", "base"),
    ("leakdir/secret.txt", "base"),
    ("sub/relleak.txt", "base"),
    ("secret.txt", ".."),
    ("outside/secret.txt", ".."),
    ("secret.txt", "../outside"),
    ("hello.txt", "base/../dev"),
    ("hello.txt", "ba\\se"),
    ("hello.txt", "nosuchenv"),
    ("", "base"),
]


@pytest.mark.parametrize("cmd", ["_file_find", "_file_hash", "_serve_file"])
@pytest.mark.parametrize(("path", "saltenv"), ESCAPES)
def test_file_server_refuses_escapes(fcluster: tuple[Cluster, RogueClient], cmd: str, path: str,
                                     saltenv: str) -> None:
    _, rogue = fcluster
    reply = rogue.request({"cmd": cmd, "path": path, "saltenv": saltenv, "loc": 0})
    assert not leaked(reply), reply
    assert is_error(reply) or reply == {}, reply
    # A refusal names nothing of the master's filesystem.
    assert str(fcluster[0].base) not in json.dumps(reply)


@pytest.mark.parametrize("payload", [
    {"cmd": "_serve_file", "path": "hello.txt", "saltenv": "base", "loc": -1},
    {"cmd": "_serve_file", "path": "hello.txt", "saltenv": "base", "loc": "0"},
    {"cmd": "_serve_file", "path": ["hello.txt"], "saltenv": "base", "loc": 0},
    {"cmd": "_file_list", "saltenv": "..", "prefix": ""},
    {"cmd": "_file_list", "saltenv": {"base": 1}, "prefix": ""},
    {"cmd": "_dir_list", "saltenv": "../outside", "prefix": ""},
])
def test_file_server_refuses_malformed(fcluster: tuple[Cluster, RogueClient], payload: dict) -> None:
    _, rogue = fcluster
    reply = rogue.request(payload)
    assert is_error(reply), reply


def test_file_server_serves_the_roots(fcluster: tuple[Cluster, RogueClient]) -> None:
    import hashlib

    _, rogue = fcluster
    assert sorted(rogue.request({"cmd": "_file_envs"})["envs"]) == ["base", "dev"]
    files = rogue.request({"cmd": "_file_list", "saltenv": "base", "prefix": ""})["files"]
    assert files == ["hello.txt", "inside-link.txt", "sub/nested.txt", "top.sls"]
    assert rogue.request({"cmd": "_dir_list", "saltenv": "base", "prefix": ""}) == {"dirs": ["sub"]}
    assert rogue.request({"cmd": "_file_list", "saltenv": "dev", "prefix": ""})["files"] == ["devonly.txt"]
    found = rogue.request({"cmd": "_file_find", "path": "salt://sub/nested.txt", "saltenv": "base"})
    assert found["hsum"] == hashlib.sha256(b"nested\n").hexdigest() and found["path"] == "sub/nested.txt"
    served = rogue.request({"cmd": "_serve_file", "path": "inside-link.txt", "saltenv": "base", "loc": 0})
    assert served["data"] == b"hello from the master\n" and served["done"] is True
    assert rogue.request({"cmd": "_file_find", "path": "devonly.txt", "saltenv": "base"}) == {}
    assert rogue.request({"cmd": "_file_hash", "path": "devonly.txt", "saltenv": "dev"})["hsum"] == \
        hashlib.sha256(b"dev\n").hexdigest()


def test_unknown_and_private_commands(fcluster: tuple[Cluster, RogueClient]) -> None:
    _, rogue = fcluster
    for cmd in ("_auth", "publish", "job_returns", "__init__", "_pillar_compile", "handle_aes", 7, None):
        assert is_error(rogue.request({"cmd": cmd}), "unknown_command")


@pytest.mark.parametrize("payload", [
    {"cmd": "_pillar", "grains": {}},
    {"cmd": "_return", "jid": "20990101000000000001", "fun": "test.ping", "return": True},
    {"cmd": "_file_hash", "path": "hello.txt"},
])
def test_only_a_heartbeat_rides_the_heartbeat_lane(fcluster: tuple[Cluster, RogueClient], payload: dict) -> None:
    """The request proxy serves requests marked as heartbeats ahead of the others' queue: the
    master answers a marked request that is not a heartbeat with an error, never with its reply."""
    _, rogue = fcluster
    reply = rogue.request(payload, heartbeat=True)
    assert is_error(reply, "malformed") and "marked as a heartbeat" in reply["error"]["message"], reply
    beat = rogue.request({"cmd": "_heartbeat", "epoch": 0}, heartbeat=True)
    assert isinstance(beat.get("now"), int) and "error" not in beat, beat
