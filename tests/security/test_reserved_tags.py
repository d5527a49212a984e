"""Reserved event tags, however written (issue 16, item 9; SECURITY.md class 3, CVE-2025-22236).

The independent suite's instances: an accepted minion's events tagged ``Salt/Job/…``,
``salt//job/…``, ``salt/presence`` and ``salt/minion/<another id>/start`` reached the master's
bus, because the check compared the raw tag with the master's prefixes.  Now a tag is checked in
its skeleton (``runtime/master/event_tags.py``: Unicode compatibility forms, case, accents,
invisible characters, blanks, backslashes, repeated/leading/trailing slashes, look-alike
characters), and everything under ``salt/`` is reserved except the sender's own
``salt/minion/<id>/…`` and ``salt/beacon/<id>/…``.  The variants below go beyond the issue's:
look-alike letters and slashes from other scripts, full-width forms, zero-width and bidi
characters, blanks, leading slashes, backslashes, the legacy job-id tag, dot segments after the
sender's own prefix.
"""

from __future__ import annotations

import pytest

from runtime.master.event_tags import skeleton, tag_refusal
from tests.security.guard import lab_attack
from tests.security.lab import ROGUE, Lab

JID = "20990101000000000001"
RESERVED = [
    # the instances
    f"Salt/Job/{JID}/new", f"salt//job/{JID}/new", "salt/presence", "salt/minion/web01/start",
    # case, slashes, blanks
    f"SALT/JOB/{JID}/ret/web01", f"/salt/job/{JID}/new", f"salt/job/{JID}/new/", "salt/presence/change/",
    f"salt\\job\\{JID}\\new", f" salt/job/{JID}/new", f"salt / job/{JID}/new", "salt/auth/", "salt///key",
    # invisible characters, full-width and look-alike letters and slashes
    f"s\u200balt/job/{JID}/new", f"\u202esalt/job/{JID}/new", "salt\u00ad/key",
    f"\uff53\uff41\uff4c\uff54/job/{JID}/new", f"\u0455alt/job/{JID}/new", "sa\u04cft/auth",
    f"salt\u2215job\u2215{JID}\u2215new", f"salt\uff0fwheel\uff0f{JID}\uff0fnew", f"s\u0101lt/run/{JID}/new",
    f"\u017falt/job/{JID}/new",
    # the rest of the master's namespace, another minion's and dot segments after one's own
    "salt/key", "salt/run/1/new", "salt/wheel/1/new", "salt/cloud/x/created", "salt", "salt/anything",
    "salt/beacon/web01/inotify/etc", f"salt/minion/{ROGUE}/../web01/start", f"salt/minion/{ROGUE}/./x",
    # Salt's legacy return event: the bare job id, also in other digits
    JID, f"{JID}/x", "\uff12\uff10\uff19\uff19" + JID[4:],
]
INVALID = ["", "x" * 513, "a\nb", "tag\x00", "salt\tjob"]
ALLOWED = [f"salt/minion/{ROGUE}/start", f"salt/minion/{ROGUE}/custom/thing", f"salt/beacon/{ROGUE}/inotify//etc",
           "minion_start", "myapp/deploy/done", "saltstack/news", "custom/salt/job/1/new", "sált-free/x"]


@pytest.mark.parametrize("tag", RESERVED)
def test_reserved_tags_are_recognised(tag: str) -> None:
    assert tag_refusal(tag, ROGUE) == "reserved_tag", (tag, skeleton(tag))


@pytest.mark.parametrize("tag", INVALID)
def test_invalid_tags_are_recognised(tag: str) -> None:
    assert tag_refusal(tag, ROGUE) == "invalid_tag", tag


@pytest.mark.parametrize("tag", ALLOWED)
def test_a_minions_own_tags_pass(tag: str) -> None:
    assert tag_refusal(tag, ROGUE) is None, (tag, skeleton(tag))


def test_reserved_tags_never_reach_the_bus(lab: Lab) -> None:
    """The rogue fires every reserved and invalid tag above (with job-shaped data): nothing
    reaches the master's bus but its own allowed events, each with ``data["id"]`` = rogue01;
    each kind of refusal is logged with its token, rate-limited."""
    data = {"jid": JID, "fun": "cmd.run", "arg": ["touch /tmp/pwned"], "tgt": "*", "minions": ["web01"],
            "id": "web01", "act": "accept", "result": True}
    with lab_attack(lab, logs=[("master", r"refused event tag .* from minion rogue01 \(reserved_tag\)"),
                               ("master", r"refused event tag .* from minion rogue01 \(invalid_tag\)")]) as atk:
        hostile = RESERVED + INVALID
        for start in range(0, len(hostile), 20):
            events = [{"tag": tag, "data": dict(data)} for tag in hostile[start:start + 20]]
            reply = atk.record("events", lab.rogue.request({"cmd": "_minion_event", "events": events}))
            assert reply == {"ok": True, "fired": 0}, reply
        own = [{"tag": tag, "data": dict(data)} for tag in ALLOWED]
        assert lab.rogue.request({"cmd": "_minion_event", "events": own}) == {"ok": True, "fired": len(ALLOWED)}
        import time

        time.sleep(0.5)
        seen = [(tag, d) for tag, d in atk.events if d.get("jid") == JID or tag in hostile]
        assert sorted(tag for tag, _ in seen) == sorted(ALLOWED), seen
        assert all(d["id"] == ROGUE for _, d in seen), seen
