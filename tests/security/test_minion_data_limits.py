"""Unbounded data from a minion (issue 16, item 4; SECURITY.md class 9).

One 11 MiB ``_grains`` upload made every later publish slow (every publish JSON-decoded every
minion's grains and pillar), and a 257-byte grain pasted into a pillar template expanded through
a YAML alias chain into a 4.9 MiB pillar in 3.3 s.  Now:

* an entry of the minion data cache is at most ``max_minion_data_size`` (1 MiB) of JSON:
  a larger grains upload is refused ``too_large`` and the stale copy dropped;
* decoded grains and pillars are kept per worker, and a glob/list target never reads them;
* minion events above ``max_event_size`` are trimmed as Salt trims them, or dropped;
* YAML aliases may not expand a document beyond max(1,000,000, 100 x its length) values and
  characters, nor refer to themselves: refused naming file:line.
"""

from __future__ import annotations

import statistics
import time

import pytest

from runtime.client import LocalClient
from tests.integration.rogue import Rogue
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import REFUSAL_LOG_INTERVAL, ROGUE, Lab, cached, data_cache_writes

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

MiB = 1024 * 1024
# 218 bytes: seven levels of eight aliases, 8**7 = 2,097,152 copies of "lol" once expanded
BOMB = "[&a [lol,lol,lol,lol,lol,lol,lol,lol], " + ", ".join(
    f"&{b} [{','.join([f'*{a}'] * 8)}]" for a, b in zip("abcdef", "bcdefg", strict=True)) + "]"


def big_grains(size: int, key_count: int = 20_000) -> dict:
    """Grains of about ``size`` bytes of JSON in many small keys (slow to decode)."""
    value = "x" * max(1, size // key_count - 12)
    return {"os": "Debian", "bulk": {f"k{i:05d}": value for i in range(key_count)}}


def restore_rogue_grains(lab: Lab) -> None:
    assert lab.rogue.request({"cmd": "_grains", "grains": {"os": "Rogue"}}) == {"ok": True}


def test_oversized_grains_are_refused(lab: Lab) -> None:
    """The issue's instance and siblings: grains of 11 MiB and 1.5 MiB through ``_grains``, and
    2 MiB attached to a ``_pillar`` request: refused ``too_large``, nothing stored, the stale
    copy dropped (the master treats the minion as having no grains rather than old ones)."""
    restore_rogue_grains(lab)
    with lab_attack(lab, allowed_writes=data_cache_writes(lab),
                    logs=[("master", r"refused _grains from minion rogue01 \(too_large\): grains of rogue01 "
                                     r"would take \d+ bytes, more than max_minion_data_size")]) as atk:
        for size in (11 * MiB, 3 * MiB // 2):
            reply = atk.record("grains", lab.rogue.request({"cmd": "_grains", "grains": big_grains(size, 2000)}))
            assert reason(reply) == "too_large", str(reply)[:200]
            assert cached(lab, ROGUE, "grains") is None
        reply = lab.rogue.request({"cmd": "_pillar", "grains": big_grains(2 * MiB, 2000)})
        assert reason(reply) == "too_large", str(reply)[:200]
        assert cached(lab, ROGUE, "grains") is None
        atk.expect_log("master", r"refused _pillar from minion rogue01 \(too_large\)")
    restore_rogue_grains(lab)


def _publish_medians(client: LocalClient, atk=None, rounds: int = 12) -> dict[str, float]:
    """Median round trip of a publish (not waiting for returns) per target type."""
    targets = {"glob": ("web0*", "glob"), "list": (["web01"], "list"), "grain": ("os:Debian", "grain")}
    timings: dict[str, list[float]] = {kind: [] for kind in targets}
    for _ in range(rounds):
        for kind, (tgt, tgt_type) in targets.items():
            started = time.monotonic()
            published = client.publish(tgt, "test.ping", tgt_type=tgt_type)
            timings[kind].append(time.monotonic() - started)
            if atk is not None:
                atk.allow_job(published.jid)
    return {kind: statistics.median(t) for kind, t in timings.items()}


def test_publishes_stay_fast_with_large_grains_everywhere(lab: Lab) -> None:
    """Four accepted minions each store grains just under the limit (about 3.8 MiB of JSON in
    80,000 keys): glob and list publishes never decode them, grain publishes decode them once
    per change, so publishing costs about what it did without them (before: every publish
    decoded all of it, about +80 ms here)."""
    client = LocalClient(lab.opts)
    bulk = [Rogue(f"bulk{i:02d}", lab.cl.ret_port, lab.cl.publish_port) for i in range(4)]
    try:
        for rogue in bulk:
            assert rogue.auth().outcome == "pending"
        assert lab.cl.key("-a", "bulk*", "-y").returncode == 0
        baseline = _publish_medians(client)
        for rogue in bulk:
            assert rogue.auth().outcome == "accepted"
            assert rogue.request({"cmd": "_grains", "grains": big_grains(900 * 1024)}) == {"ok": True}
        with lab_attack(lab, keys_change=True, allowed_writes=data_cache_writes(lab), extra_jobs_ok=True) as atk:
            medians = _publish_medians(client, atk)
            atk.record("medians", {"baseline": baseline, "with large grains": medians})
            slow = {kind: (baseline[kind], m) for kind, m in medians.items() if m > 2 * baseline[kind] + 0.03}
            assert not slow, f"publishes slowed down by the stored grains (before, after): {slow}"
    finally:
        for rogue in bulk:
            rogue.close()
        lab.cl.key("-d", "bulk*", "-y")


def test_minion_events_are_bounded(lab: Lab) -> None:
    """Events of 2 MiB (one large value), of nested maps with large values, and of 200,000
    small keys: the first two reach the bus trimmed as Salt trims them ("VALUE_TRIMMED"), the
    third is dropped; a normal event in the same batch is intact."""
    with lab_attack(lab, logs=[("master", r"dropped event 'rogue/flood' from minion rogue01 \(too_large\)")]) as atk:
        events = [
            {"tag": "rogue/big", "data": {"blob": "x" * (2 * MiB), "small": "kept"}},
            {"tag": "rogue/nested", "data": {"outer": {"inner": "y" * (MiB + 10), "n": 1}, "z": 2}},
            {"tag": "rogue/flood", "data": {f"k{i}": i for i in range(200_000)}},
            {"tag": "rogue/normal", "data": {"hello": "world"}},
        ]
        for event in events:      # one request each: a request is bounded by max_message_size
            assert lab.rogue.request({"cmd": "_minion_event", "events": [event]})["ok"] is True
        time.sleep(0.5)
        seen = {tag: data for tag, data in atk.events if tag.startswith("rogue/")}
        assert seen["rogue/big"]["blob"] == "VALUE_TRIMMED" and seen["rogue/big"]["small"] == "kept"
        assert seen["rogue/nested"]["outer"]["inner"] == "VALUE_TRIMMED" and seen["rogue/nested"]["z"] == 2
        assert "rogue/flood" not in seen
        assert seen["rogue/normal"]["hello"] == "world" and seen["rogue/normal"]["id"] == ROGUE


def test_alias_bomb_in_a_grain_pasted_into_a_pillar(lab: Lab) -> None:
    """The issue's instance: a 218-byte grain holding a YAML alias chain, pasted by a pillar
    template (``paste: {{ grains['paste'] }}``).  Refused at once, naming paste.sls:1 in the
    master's log; the rest of the rogue's pillar is compiled; the master stays small."""
    assert len(BOMB) < 257
    with lab_attack(lab, allowed_writes=data_cache_writes(lab),
                    logs=[("master", r"paste\.sls:1: .*YAML aliases expand this value to more than 1,000,000")]) as atk:
        started = time.monotonic()
        pillar = lab.rogue.request({"cmd": "_pillar", "grains": {"paste": BOMB}})["pillar"]
        assert time.monotonic() - started < 2.0
        atk.record("pillar", pillar)
        assert "paste" not in pillar and pillar.get("rogue_own") == "mine", str(pillar)[:300]
    restore_rogue_grains(lab)


def test_recursive_and_merged_aliases_in_grains(lab: Lab) -> None:
    """Siblings: an alias inside its own anchor (recursive data: before, a traceback), and merge
    keys repeated in a chain (``<<: *x``) that expand the same way: refused with file:line;
    a small legitimate use of aliases still renders."""
    cases = {
        "[&a [1, *a]]": r"paste\.sls:1: .*a YAML alias refers to the anchor it is inside of",
        ("{a: &a {" + ", ".join(f"k{i}: v" for i in range(60)) + "}, "
         + ", ".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 60)}]" for p, n in zip("abc", "bcd", strict=True)) + "}"):
            r"paste\.sls:1: .*YAML aliases expand this value",
    }
    with lab_attack(lab, allowed_writes=data_cache_writes(lab), logs=[("master", p) for p in cases.values()]) as atk:
        for grain in cases:
            time.sleep(REFUSAL_LOG_INTERVAL + 0.1)   # pillar errors of one file:line are logged once an interval
            pillar = lab.rogue.request({"cmd": "_pillar", "grains": {"paste": grain}})["pillar"]
            atk.record("pillar", pillar)
            assert "paste" not in pillar, str(pillar)[:300]
        pillar = lab.rogue.request({"cmd": "_pillar", "grains": {"paste": "{base: &b {a: 1}, copy: *b}"}})["pillar"]
        assert pillar["paste"] == {"base": {"a": 1}, "copy": {"a": 1}}
    restore_rogue_grains(lab)
