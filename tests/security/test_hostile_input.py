"""Hostile input reaching tracebacks and half-writes (issue 16, item 8; SECURITY.md class 9).

The independent suite's instances: a ``publish``/``job_returns`` naming a user who has no
client key answered ``internal_error`` and wrote a traceback per request (300 requests, 363 KB
of log); a grain value holding a flow mapping used as a key (``{[1]: 1}``), or a minion id like
``{{7*7}}``, pasted by a pillar template gave ``internal_error`` and a traceback; a bad
``timeout`` wrote job rows for a job that was never published.

Now every refusal is a documented token (``runtime/protocol/errors.py``), logged once per kind
and interval (tracebacks of unexpected failures too), and a request is fully checked
(``from_wire``) before anything is written.  The guard checks, after every attack of the suite,
that the master logged no traceback and answered no ``internal_error``; the variants here:

* users that have no key, cannot name a key file, or are far too long, in both client commands;
* publish bodies that are not jobs (timeouts that are not seconds, kwarg keys that are not
  strings, ret/arg/tgt of the wrong type), none leaving a job row;
* grains that break the YAML a pillar template pastes them into, in every way PyYAML's own
  constructors used to raise (unhashable keys, ``!!float`` of nothing, ``!!int`` of a word,
  ``!!binary`` of non-base64, ``!!map`` of a scalar);
* minion ids that are YAML or Jinja syntax, pasted the same way (real keys, accepted).
"""

from __future__ import annotations

import re
import time

from runtime import codec
from runtime.crypt.clientkey import client_key_path, load_client_key
from tests.integration.rogue import Rogue
from tests.security.clients import publish_load, reason
from tests.security.guard import lab_attack
from tests.security.lab import REFUSAL_LOG_INTERVAL, Lab, data_cache_writes

UNKNOWN_USERS = ["nosuchuser", "", "../root", "a/b", "x" * 300, "root\x00", ".", "..", "\u202eresu"]


def master_key(lab: Lab) -> tuple[str, bytes]:
    from runtime.master.handlers.context import current_user

    user = current_user()
    return user, load_client_key(client_key_path(lab.opts["cachedir"], user))


def test_unknown_users_in_client_commands(lab: Lab) -> None:
    """The issue's instance (a user without a client key, 300 times) and siblings: users that
    cannot name a key file, an over-long user, in ``publish`` and ``job_returns``.  Each is
    ``bad_proof`` (the same answer whether or not the user exists), logged a bounded number of
    times, and the master's log grows by a few lines, not a traceback per request."""
    _, key = master_key(lab)
    log = lab.base / "master.log"
    with lab_attack(lab, logs=[("master", r"refused publish from 127\.0\.0\.61 \(bad_proof\)"),
                               ("master", r"refused job_returns from 127\.0\.0\.61 \(bad_proof\)")]) as atk:
        raw = atk.raw(source="127.0.0.61")
        size_before = log.stat().st_size
        for i in range(300):
            user = UNKNOWN_USERS[i % len(UNKNOWN_USERS)]
            cmd = "publish" if i % 2 else "job_returns"
            job = {"fun": "test.ping", "tgt": "*"} if cmd == "publish" else {"jid": "20990101000000000001"}
            reply = raw.clear(publish_load(key, user, job, cmd=cmd))
            assert reason(reply) == "bad_proof", (user, reply)
        grown = log.stat().st_size - size_before
        assert grown < 20_000, f"the master's log grew by {grown} bytes for 300 refused requests"


BAD_JOBS = {
    "timeout NaN": {"timeout": float("nan")},
    "timeout infinite": {"timeout": float("inf")},
    "timeout negative": {"timeout": -1},
    "timeout huge": {"timeout": 2 ** 40},
    "timeout text": {"timeout": "5"},
    "timeout list": {"timeout": [5]},
    "timeout true": {"timeout": True},
    "timeout empty string": {"timeout": ""},
    "kwarg int key": {"kwarg": {1: "x"}},
    "kwarg bytes key": {"kwarg": {b"k": "x"}},
    "kwarg list": {"kwarg": ["x"]},
    "arg map": {"arg": {"a": 1}},
    "ret int": {"ret": 5},
    "tgt map": {"tgt": {"a": 1}},
    "tgt list of ints": {"tgt": [1, 2]},
    "fun list": {"fun": ["test.ping"]},
    "fun comma list": {"fun": "test.ping,cmd.run"},
}


def test_publish_bodies_that_are_not_jobs_write_nothing(lab: Lab) -> None:
    """The issue's instance (a bad ``timeout``) and siblings: every field of the job of the wrong
    type.  Each is ``bad_job`` before a jid exists; the guard finds no job row, no publication
    and no ``salt/job/.../new`` event."""
    user, key = master_key(lab)
    with lab_attack(lab, logs=[("master", r"refused publish from 127\.0\.0\.62 \(bad_job\)")]) as atk:
        raw = atk.raw(source="127.0.0.62")
        for name, bad in BAD_JOBS.items():
            job = {"fun": "test.ping", "tgt": "web01", "tgt_type": "glob", "arg": [], "kwarg": {}, **bad}
            reply = raw.clear(publish_load(key, user, codec.pack(job)))
            assert reason(reply) == "bad_job", (name, reply)
        # (the guard's pings publish to ["web01"]; these bodies target "web01" as a glob)
        assert not [tag for tag, data in atk.events if tag.endswith("/new") and data.get("tgt") == "web01"]


YAML_BREAKERS = {
    "{[1]: 1}": "found unhashable key",              # the instance
    "{{7*7}}": "found unhashable key",
    "? [a, b]\n: c": "found unhashable key",
    "!!float": "cannot read '' as float",
    "!!int abc": "cannot read 'abc' as int",
    "!!binary zz": "failed to decode base64",
    "!!map text": "expected a mapping node",
    "!!bool maybe": "cannot read 'maybe' as bool",
}


def test_grains_that_break_a_pasting_template(lab: Lab) -> None:
    """A grain pasted by a pillar template (``paste: {{ grains['paste'] }}``) that makes YAML the
    loader cannot construct: the rogue's pillar carries an ``_errors`` entry (as Salt's does), the
    rest of it is compiled, the master logs the render error naming paste.sls, never a traceback."""
    with lab_attack(lab, allowed_writes=data_cache_writes(lab)) as atk:
        for grain, problem in YAML_BREAKERS.items():
            time.sleep(REFUSAL_LOG_INTERVAL + 0.1)   # one log line per file:line and interval
            reply = atk.record("pillar", lab.rogue.request({"cmd": "_pillar", "grains": {"paste": grain}}))
            assert reason(reply) is None, (grain, reply)
            pillar = reply["pillar"]
            assert "paste" not in pillar and pillar.get("rogue_own") == "mine", (grain, pillar)
            assert pillar.get("_errors"), (grain, pillar)
            atk.expect_log("master", r"paste\.sls:\d+: .*" + re.escape(problem))
    assert lab.rogue.request({"cmd": "_grains", "grains": {"os": "Rogue"}}) == {"ok": True}


ODD_IDS = ["{{7*7}}", "{x: 1}", "[x]", "&a *a", "!!float", "'q", "- x", "a: b", "#hash", "{% raw %}"]


def glob_escape(minion_id: str) -> str:
    """A key match (fnmatch glob) that matches exactly ``minion_id``."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in minion_id)


def test_minion_ids_that_are_template_or_yaml_syntax(lab: Lab) -> None:
    """The issue's instance (a minion id like ``{{7*7}}``) and siblings: ids that are YAML or
    Jinja syntax, accepted with real keys, asking for their pillar, which pastes the id
    (``host: {{ grains['id'] }}`` for ids that do not start with a letter or digit).  Each gets a
    pillar (with ``_errors`` where the id broke the YAML), none an ``internal_error``."""
    rogues = {minion_id: Rogue(minion_id, lab.cl.ret_port, lab.cl.publish_port) for minion_id in ODD_IDS}
    try:
        with lab_attack(lab, keys_change=True, allowed_writes=data_cache_writes(lab)) as atk:
            for rogue in rogues.values():
                assert rogue.auth().outcome == "pending"
            for minion_id in ODD_IDS:
                assert lab.cl.key("-a", glob_escape(minion_id), "-y").returncode == 0, minion_id
            for minion_id, rogue in rogues.items():
                assert rogue.auth().outcome == "accepted", minion_id
                reply = atk.record("pillar", rogue.request({"cmd": "_pillar", "grains": {"os": "Odd"}}))
                assert reason(reply) is None, (minion_id, reply)
                pillar = reply["pillar"]
                assert pillar.get("common") == "shared" or pillar.get("_errors"), (minion_id, pillar)
    finally:
        for minion_id, rogue in rogues.items():
            rogue.close()
            lab.cl.key("-d", glob_escape(minion_id), "-y")

