"""Class 3: minion events that become jobs or master actions (CVE-2025-22236, CVE-2025-22239).

Salt let a minion fire events under the master's own tags (``salt/job/.../new``,
``salt/auth``...) and through ``_minion_event`` loads reach the job cache or the reactor in
another's name.  saltpan fires a minion's events with ``data["id"]`` from its session, refuses
the master's tag prefixes, bounds the batch, and never turns an event into a publication.
"""

from __future__ import annotations

from runtime.master.event_tags import tag_refusal
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import ROGUE, Lab

MASTER_TAGS = [
    "salt/job/20990101000000000001/new",
    "salt/job/20990101000000000001/ret/web01",
    "salt/auth",
    "salt/key",
    "salt/presence/change",
    "salt/presence/present",
    "salt/run/20990101000000000001/new",
    "salt/wheel/20990101000000000001/new",
]
JOB_DATA = {"jid": "20990101000000000001", "fun": "cmd.run", "arg": ["touch /tmp/pwned"], "tgt": "*",
            "tgt_type": "glob", "minions": ["web01", "db01"], "user": "root", "act": "accept", "id": "web01",
            "result": True, "pub": "forged"}


def test_master_tags_are_refused(lab: Lab) -> None:
    assert all(tag_refusal(tag, ROGUE) == "reserved_tag" for tag in MASTER_TAGS)
    with lab_attack(lab, logs=[("master", r"refused event tag .* from minion rogue01")]) as atk:
        events = [{"tag": tag, "data": dict(JOB_DATA)} for tag in MASTER_TAGS]
        for _ in range(3):
            reply = atk.record("event reply", lab.rogue.request({"cmd": "_minion_event", "events": events}))
            assert reply == {"ok": True, "fired": 0}, reply
        forged = [tag for tag, data in atk.events if "20990101000000000001" in tag or data.get("pub") == "forged"
                  or data.get("jid") == JOB_DATA["jid"]]
        assert not forged, forged


def test_events_shaped_like_jobs_publish_nothing(lab: Lab) -> None:
    """Tags a reactor might map to jobs, job-shaped data, Salt's ``_minion_event`` forms, batches
    over the limit and malformed entries: namespaced at most, never a publication."""
    with lab_attack(lab, logs=[("master", r"refused _minion_event from minion rogue01 \(bad_event\): events must be a list")]) \
            as atk:
        allowed = [{"tag": f"salt/minion/{ROGUE}/publish", "data": dict(JOB_DATA)},
                   {"tag": "publish", "data": {"cmd": "publish", **JOB_DATA}},
                   {"tag": "salt/beacon/rogue01/inotify//etc", "data": {"fun": "state.apply", "tgt": "*"}}]
        reply = atk.record("event reply", lab.rogue.request({"cmd": "_minion_event", "events": allowed}))
        assert reply == {"ok": True, "fired": 3}
        odd = [{"tag": "", "data": {}}, {"tag": "x" * 600, "data": {}}, {"tag": 5, "data": {}},
               {"tag": "ok/tag", "data": "not a map"}, "not an event", {"data": {}}]
        assert atk.record("event reply", lab.rogue.request({"cmd": "_minion_event", "events": odd})) == \
            {"ok": True, "fired": 0}
        for _ in range(3):
            too_many = [{"tag": f"flood/{i}", "data": {}} for i in range(101)]
            assert reason(lab.rogue.request({"cmd": "_minion_event", "events": too_many})) == "bad_event"
            assert reason(lab.rogue.request({"cmd": "_minion_event", "events": {"tag": "x"}})) == "bad_event"
        # Salt's own forms of a minion event load (tag/data at the top level, "pretag")
        for load in ({"cmd": "_minion_event", "tag": "salt/job/1/new", "data": JOB_DATA},
                     {"cmd": "_minion_event", "pretag": "salt/auth", "events": []}):
            reply = lab.rogue.request(load)
            assert reason(reply) == "bad_event" or reply == {"ok": True, "fired": 0}, reply
        fired = [(tag, data) for tag, data in atk.events if tag.startswith(("salt/minion/rogue01/", "publish",
                                                                             "salt/beacon/"))]
        assert len(fired) == 3 and all(data["id"] == ROGUE for _, data in fired), fired
        assert not [tag for tag, _ in atk.events if tag.startswith("flood/")]
