"""Class 10: publish ACL bypass (CVE-2022-22941, CVE-2013-4435).

The lab's publisher_acl user may run ``test.ping`` anywhere and ``test.echo`` on ``web*``.
It holds its own client key and speaks the wire protocol directly, so it can send what the
CLI would never build: prefix and comma tricks in the function, lists of functions, targets
of every type that reach db01, targets that match nothing, nodegroups that the minions define
differently from the master.  Last, a real process running as that user tries what a local
user can do: read other keys, sign as root, reach the event bus.
"""

from __future__ import annotations

import json
import os

import pytest

from runtime.crypt.clientkey import load_client_key
from tests.security.clients import publish_load, reason
from tests.security.guard import lab_attack
from tests.security.lab import Lab, publish, wait_return

FUNCTIONS = ["test.pingX", "test.ping,cmd.run", ["test.ping", "cmd.run"], "test.ping ", " test.ping",
             "test.ping\x00cmd.run", "test.ping\ncmd.run", "test.*", "*", "", "cmd.run", "test.ping.x",
             "TEST.PING", "test.ping;cmd.run", "state.apply", "saltutil.kill_job", None, 5, {"test.ping": 1}]
TARGETS = [  # (tgt, tgt_type): each reaches db01 (where test.echo is not allowed) or nothing at all
    ("*", "glob"), ("db01", "glob"), ("web* or db01", "compound"), ("L@web01,db01", "compound"),
    ("web01 or G@role:db", "compound"), ("not web01", "compound"), (["web01", "db01"], "list"),
    ("web01,db01", "list"), (".*", "pcre"), ("role:db", "grain"), ("role:*", "grain"), ("N@nosuch", "compound"),
    ("nosuch*", "glob"), ([], "list"), (["ghost"], "list"), ("web01", "bogus"), ({"web01": 1}, "glob"),
    ("( web01", "compound"), ("secret:*", "pillar"),
]


def user_key(lab: Lab, user: str) -> bytes:
    return load_client_key(os.path.join(lab.opts["cachedir"], f".{user}_key"))


def test_function_name_tricks(lab: Lab, need_user: str) -> None:
    key = user_key(lab, need_user)
    with lab_attack(lab, logs=[("master", r"refused publish from [0-9.]+ \(acl\)"),
                               ("master", r"refused publish from [0-9.]+ \(bad_job\)")]) as atk:
        raw = atk.raw()
        for fun in FUNCTIONS:
            job = {"tgt": "web01", "tgt_type": "glob", "fun": fun, "arg": ["hi"]}
            assert reason(raw.clear(publish_load(key, need_user, job))) in ("acl", "bad_job"), fun


def test_targets_beyond_the_allowed_minions(lab: Lab, need_user: str) -> None:
    key = user_key(lab, need_user)
    with lab_attack(lab, logs=[("master", r"refused publish from [0-9.]+ \(acl\): user '\w+' may not run "
                                          r"test.echo on db01"),
                               ("master", r"refused publish from [0-9.]+ \(no_minions\)")]) as atk:
        raw = atk.raw()
        for tgt, tgt_type in TARGETS:
            job = {"tgt": tgt, "tgt_type": tgt_type, "fun": "test.echo", "arg": ["hi"]}
            got = reason(raw.clear(publish_load(key, need_user, job)))
            assert got in ("acl", "no_minions", "bad_target", "bad_job"), (tgt, tgt_type, got)


def test_minions_decide_only_within_what_the_master_checked(lab: Lab, need_user: str) -> None:
    """``webs`` is ``web*`` on the master but ``*`` in db01's own config: the ACL allows the job
    for web01, and db01, matching its own definition, must still not run it."""
    key = user_key(lab, need_user)
    with lab_attack(lab) as atk:
        raw = atk.raw()
        for tgt, tgt_type in (("webs", "nodegroup"), ("N@webs", "compound")):
            reply = raw.clear(publish_load(key, need_user, {"tgt": tgt, "tgt_type": tgt_type, "fun": "test.echo",
                                                            "arg": [f"via-{tgt_type}"]}))
            assert reply["minions"] == ["web01"], reply
            atk.allow_job(reply["jid"])
            assert wait_return(lab, reply["jid"], "web01")["return"] == f"via-{tgt_type}"
        # the same target from the master's own user (no ACL) is the operator's to decide
        jid = atk.allow_job(publish(lab, "webs", "test.ping", tgt_type="nodegroup"))
        assert wait_return(lab, jid, "web01")["return"] is True
        db_log = lab.cl.minions["db01"].log_path.read_text()
        ran = [line for line in db_log.splitlines() if "test.echo" in line]
        assert not ran, ran


USER_SCRIPT = r"""
import json, os, sys
from runtime import config, codec, transport
from runtime.client import ClientError, LocalClient
from runtime.crypt.clientkey import client_key_path, load_client_key, make_proof
opts = config.load(os.environ["LAB_MASTER_CONF"], "master")
me = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LAB_USER")
out = {}
def attempt(name, fn):
    try:
        out[name] = ["ok", repr(fn())[:200]]
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)[:200]]
attempt("read root key", lambda: open(client_key_path(opts["cachedir"], "root")).read())
attempt("read master.pem", lambda: open(os.path.join(opts["pki_dir"], "master.pem")).read())
attempt("list cachedir", lambda: os.listdir(opts["cachedir"]))
attempt("list pki_dir", lambda: os.listdir(opts["pki_dir"]))
attempt("event bus", lambda: open(os.path.join(opts["sock_dir"], "master_event_pub.ipc"), "rb"))
own = load_client_key(client_key_path(opts["cachedir"], USER))
def forged(user):
    body = codec.pack({"tgt": "*", "tgt_type": "glob", "fun": "cmd.run", "arg": ["id"]})
    proof = make_proof(own, user, body)
    load = {"cmd": "publish", "body": body, "proof": proof}
    with transport.RequestClient(transport.tcp_address("127.0.0.1", opts["ret_port"]), timeout=5) as c:
        return codec.unpack_envelope(c.request(codec.pack_envelope("clear", load))).load
attempt("sign as root", lambda: forged("root"))
attempt("cmd.run as myself", lambda: LocalClient(opts, user=USER).publish("*", "cmd.run", ["id"]))
attempt("test.ping as myself", lambda: LocalClient(opts, user=USER).publish("web01", "test.ping").to_wire())
print(json.dumps(out))
"""


def test_a_local_user_cannot_get_further(lab: Lab, need_user: str) -> None:
    with lab_attack(lab, logs=[("master", r"refused publish from [0-9.]+ \(bad_proof\): client proof for user "
                                          r"'root' does not verify")]) as atk:
        proc = lab.run_as_user(f"USER = {need_user!r}\n" + USER_SCRIPT)
        assert proc.returncode == 0, proc.stderr
        out = atk.record("user script", json.loads(proc.stdout))
        for name in ("read root key", "read master.pem", "list cachedir", "list pki_dir", "event bus"):
            assert out[name][0] == "PermissionError", (name, out[name])
        assert "bad_proof" in out["sign as root"][1]
        assert out["cmd.run as myself"][0] == "ClientError" and "(acl)" in out["cmd.run as myself"][1]
        allowed = out["test.ping as myself"]
        assert allowed[0] == "ok", allowed
        atk.allow_job(eval(allowed[1])["jid"])  # noqa: S307 - the repr of a dict printed by the script


pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.slow]
