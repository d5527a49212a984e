"""Class 2: a minion acting as another (CVE-2024-38822: Salt took the minion id from the load).

The rogue holds a real accepted key.  Whatever id it writes into a load, the master acts for
the id bound to its session: it gets its own pillar (or an ``id_mismatch`` refusal), its
returns for jobs sent elsewhere are refused, and its events carry its own id.
"""

from __future__ import annotations

import os
import time

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.channel import _header
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import ROGUE, VICTIM, Lab, cached, data_cache_writes, publish, wait_return

OWN_KEYS = {"common", "rogue_own"}


def own_pillar_or_refused(atk, reply: dict) -> None:
    """The rogue's own pillar, or (with the id check) an id_mismatch refusal."""
    if reason(reply) == "id_mismatch":
        atk.expect_log("master", r"id_mismatch|naming id")
        return
    pillar = reply["pillar"]
    assert OWN_KEYS <= set(pillar), pillar
    assert "secret" not in pillar and "ext_secret" not in pillar, sorted(pillar)


def test_pillar_of_another_minion(lab: Lab) -> None:
    web_grains = cached(lab, "web01", "grains")
    with lab_attack(lab, allowed_writes=data_cache_writes(lab)) as atk:
        for payload in (
            {"cmd": "_pillar", "id": "web01"},
            {"cmd": "_pillar", "id": "web01", "grains": {"id": "web01", "role": "web"}},
            {"cmd": "_pillar", "grains": {"id": "db01"}, "saltenv": "base", "pillarenv": "base"},
            {"cmd": "_pillar", "minion_id": "db01", "tgt": "db01", "grains": {"id": "db01"}},
        ):
            own_pillar_or_refused(atk, atk.record("pillar reply", lab.rogue.request(payload)))
    assert cached(lab, "web01", "grains") == web_grains


def test_grains_in_another_minions_name(lab: Lab) -> None:
    before = {m: cached(lab, m, "grains") for m in ("web01", "db01")}
    with lab_attack(lab, allowed_writes=data_cache_writes(lab)) as atk:
        for payload in ({"cmd": "_grains", "id": "web01", "grains": {"role": "db"}},
                        {"cmd": "_grains", "grains": {"id": "db01", "role": "web", "os": "pwned"}}):
            reply = atk.record("grains reply", lab.rogue.request(payload))
            if reason(reply) == "id_mismatch":
                atk.expect_log("master", r"id_mismatch|naming id")
            else:
                assert reply == {"ok": True}
    assert {m: cached(lab, m, "grains") for m in ("web01", "db01")} == before
    rogue_grains = cached(lab, ROGUE, "grains")
    assert rogue_grains is None or rogue_grains["id"] == ROGUE


def test_return_for_another_minion(lab: Lab) -> None:
    with lab_attack(lab, logs=[("master", r"refused _return from minion rogue01 \(not_targeted\): job \d+ was not sent to rogue01")]) \
            as atk:
        jid = atk.allow_job(publish(lab, "web01", "test.sleep", ["1"]))
        for payload in (
            {"cmd": "_return", "jid": jid, "id": "web01", "fun": "test.sleep", "return": "FORGED", "retcode": 0,
             "success": True},
            {"cmd": "_return", "jid": jid, "fun": "test.sleep", "return": "FORGED", "retcode": 0, "success": True},
        ):
            for _ in range(3):
                assert reason(atk.record("return reply", lab.rogue.request(payload))) in ("not_targeted",
                                                                                          "id_mismatch")
        assert wait_return(lab, jid, "web01")["return"] is True
        returned = [(tag, data) for tag, data in atk.events if tag.startswith(f"salt/job/{jid}/ret/")]
        assert [(tag, data["id"], data["return"]) for tag, data in returned] == \
               [(f"salt/job/{jid}/ret/web01", "web01", True)]


def test_events_in_another_minions_name(lab: Lab) -> None:
    with lab_attack(lab, logs=[("master", r"refused event tag .* from minion rogue01 \(reserved_tag\)")]) as atk:
        events = [{"tag": "salt/minion/web01/start", "data": {"id": "web01", "data": "Minion web01 started"}},
                  {"tag": "minion_start", "data": {"id": "web01"}},
                  {"tag": "custom/deploy/done", "data": {"id": "web01", "minion": "web01"}},
                  {"tag": "salt/job/20990101000000000000/ret/web01", "data": {"id": "web01", "return": True}}]
        for _ in range(3):
            # naming web01 in the load: refused (id_mismatch) or served as the rogue's own
            reply = atk.record("event reply", lab.rogue.request({"cmd": "_minion_event", "id": "web01",
                                                                 "events": events}))
            if reason(reply) == "id_mismatch":
                atk.expect_log("master", r"id_mismatch|naming id")
            else:
                assert reply == {"ok": True, "fired": 2}
            # naming web01 only inside the events: web01's own tags and job tags are reserved
            reply = atk.record("event reply", lab.rogue.request({"cmd": "_minion_event", "events": events}))
            assert reply == {"ok": True, "fired": 2}
        fired = [(tag, data) for tag, data in atk.events if tag in ("minion_start", "custom/deploy/done")]
        assert fired and all(data["id"] == ROGUE for _, data in fired), fired
        assert not [tag for tag, _ in atk.events if tag.startswith(("salt/job/20990101", "salt/minion/web01/"))]


def test_another_minions_session_id(lab: Lab) -> None:
    """The session id travels in clear in every header: the fake master on mitm01's path sees it.
    A request under that sid sealed with any other key fails authentication."""

    def seen_sids() -> list[bytes]:
        sids: list[bytes] = []
        for frame in lab.fake.snapshot():
            try:
                env = codec.unpack_envelope(frame)
                if env.enc == codec.ENC_AES and isinstance(env.load.get("h"), bytes):
                    header = codec.unpack(env.load["h"], codec.HEADER_LIMITS)
                    if "ctr" in header and header["sid"] not in sids:
                        sids.append(header["sid"])
            except codec.DecodeError:
                continue
        return sids

    time.sleep(1.0)  # a heartbeat of mitm01's current session crosses the fake master
    sids = seen_sids()
    assert sids, f"the fake master saw no sealed request from {VICTIM}"
    rogue_keys = lab.rogue.channel.keys
    with lab_attack(lab, logs=[("master", r"refused sealed request from [0-9.]+ \(bad_tag\): authentication failed")]) \
            as atk:
        raw = atk.raw()
        for index, sid in enumerate(reversed(sids[-5:])):
            # the current session: bad_tag; older ones may be gone already (unknown_session)
            allowed = ("bad_tag", "bad_message") if index == 0 else ("bad_tag", "bad_message", "unknown_session")
            for ctr in (1, 10**6, 2**40):
                header = _header({"v": 1, "sid": sid, "ctr": ctr, "ts": aead_now()})
                ct = aead.seal(rogue_keys.c2s, aead.DOMAIN_C2S, ctr, codec.pack({"cmd": "_pillar"}), header)
                body = codec.pack_envelope(codec.ENC_AES, {"h": header, "ct": ct})
                assert reason(raw.decode(raw.request(body))) in allowed, sid.hex()
            garbage = codec.pack_envelope(codec.ENC_AES, {"h": _header({"v": 1, "sid": sid, "ctr": 5,
                                                                             "ts": aead_now()}),
                                                          "ct": os.urandom(64)})
            assert reason(raw.decode(raw.request(garbage))) in allowed


def aead_now() -> int:
    return int(time.time() * 1000)
