"""Class 1: request-server methods that are not meant to be exposed (CVE-2020-11651).

Salt's ClearFuncs dispatched any ``cmd`` naming a method: ``_prep_auth_info`` handed the root
key to anyone on port 4506, ``_send_pub`` published jobs without auth.  saltpan dispatches
only commands in an explicit allow-list; everything else, including every other method of the
worker, dunders and non-string commands, gets ``unknown_command``.
"""

from __future__ import annotations

import pytest

from runtime import protocol
from runtime.master.worker import HANDLER_CLASSES
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import Lab

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

NON_STRINGS = [5, None, True, 1.5, ["_auth"], {"cmd": "_auth"}, b"_auth"]


def worker_names() -> list[str]:
    """Every attribute name of the request handlers, the protocol's class names and commands."""
    names = {"__init__", "__class__", *protocol.COMMANDS, *(r.__name__ for r in protocol.REQUESTS)}
    for cls in HANDLER_CLASSES:
        names.update(name for name in dir(cls) if not name.startswith("__"))
    return sorted(names)


def test_every_worker_method_named_in_a_clear_load_is_refused(lab: Lab) -> None:
    clear_commands = set(protocol.CLEAR_COMMANDS)
    with lab_attack(lab, logs=[("master", r"refused clear command")]) as atk:
        raw = atk.raw()
        names = [n for n in worker_names() if n not in clear_commands]
        names += ["_prep_auth_info", "_send_pub", "_send_ssh_pub", "wheel", "runner", "mk_token", "get_token",
                  "_return", "_pillar", "_serve_file", "_minion_event", "__class__", "__globals__", "PUBLISH"]
        for cmd in names + NON_STRINGS:
            assert reason(raw.clear({"cmd": cmd, "id": "web01"})) == "unknown_command", cmd


def test_every_worker_method_named_in_a_sealed_load_is_refused(lab: Lab) -> None:
    aes_commands = set(protocol.SESSION_COMMANDS)
    with lab_attack(lab, logs=[("master", r"refused command .* from minion rogue01")]) as atk:
        names = [n for n in worker_names() if n not in aes_commands]
        for cmd in names + NON_STRINGS:
            reply = atk.record("sealed reply", lab.rogue.request({"cmd": cmd}))
            assert reason(reply) == "unknown_command", cmd


@pytest.mark.parametrize("load", [
    # CVE-2020-11651: the root key for the asking, then a job published with it
    {"cmd": "_prep_auth_info"},
    {"cmd": "_send_pub", "fun": "cmd.run", "arg": ["id"], "tgt": "*", "tgt_type": "glob", "jid": "1"},
    {"cmd": "publish", "fun": "cmd.run", "arg": ["id"], "tgt": "*", "key": "guessed", "user": "root"},
    {"cmd": "publish", "body": b"\x80", "proof": {"user": "root"}},
    {"cmd": "job_returns", "body": b"\x81\xa3jid\xa11", "proof": {"user": "root", "ts": 0, "nonce": b"", "mac": b""}},
    {"cmd": "fileserver_update", "body": b"\x80", "proof": {"user": "root", "ts": 0, "nonce": b"", "mac": b""}},
], ids=["prep_auth_info", "send_pub", "salt_publish", "publish_no_mac", "job_returns_no_mac", "fileserver_update_no_mac"])
def test_salt_cve_2020_11651_loads(lab: Lab, load: dict) -> None:
    with lab_attack(lab, logs=[("master", r"refused (clear command|publish|job_returns|fileserver_update)")]) as atk:
        raw = atk.raw()
        for _ in range(3):
            assert reason(raw.clear(load)) in ("unknown_command", "bad_proof")
