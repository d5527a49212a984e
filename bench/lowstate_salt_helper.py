"""Real Salt's in-process ``state.show_lowstate`` over the bench fleet (runs inside the Salt venv).

What ``salt-call --local state.show_lowstate`` does, per minion: compile the minion's
pillar (``State._gather_pillar``, i.e. ``salt.pillar.get_pillar(...).compile_pillar()``)
and then ``HighState.compile_low_chunks()`` with it.

One new ``salt.state.HighState`` per minion, as every ``show_lowstate`` call builds
one, sharing the opts dict and (through HighState's ``file_client`` argument) one local
file client across the fleet, as compile_pillar's helper shares opts across its
``Pillar`` objects.  A single HighState cannot serve several minions: Salt 3008's
copy-on-write opts give every loader its own snapshot of grains and pillar, so a
reused object renders the next minion's sls with the first minion's pillar (checked:
its lowstates come out wrong).

Writes JSON to --out: {"minions", "seconds", "errors", "lowstates": {id: chunks for --sample}}.
Used by bench/compile_lowstate.py; not meant to be run by hand.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from pillar_salt_helper import minion_opts  # noqa: E402


def fresh_lowstate(opts: dict, file_client, minion_id: str, grains: dict):
    import salt.state

    opts["id"] = minion_id
    opts["grains"] = dict(grains)
    # as a fresh salt-call starts: Salt's pillar compile merges into what opts["pillar"]
    # holds, so the last minion's pillar would leak into this one's
    opts["pillar"] = {}
    with salt.state.HighState(opts, file_client=file_client) as highstate:
        return compile_chunks(highstate, highstate.opts["pillar"])


def compile_chunks(highstate, pillar: dict):
    """show_lowstate's body: pillar errors refuse, else the low chunks (or the compile errors)."""
    if pillar.get("_errors"):
        return None
    highstate.push_active()
    try:
        return highstate.compile_low_chunks()
    finally:
        highstate.pop_active()


def main() -> int:
    parser = argparse.ArgumentParser()
    common.add_helper_args(parser, "comma-separated minion ids whose lowstate to write out")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    import salt.state  # noqa: F401 - imported before the clock starts

    fleet, minions, sample = common.helper_minions(args, args.scratch)
    setup_start = time.perf_counter()
    opts = minion_opts(args.scratch, fleet)
    import salt.fileclient

    file_client = salt.fileclient.get_file_client(opts)
    setup = time.perf_counter() - setup_start
    lowstates = {}
    errors = 0
    per_minion = []
    start = time.perf_counter()
    for minion_id, grains in minions:
        one = time.perf_counter()
        chunks = fresh_lowstate(opts, file_client, minion_id, grains)
        per_minion.append(time.perf_counter() - one)
        ok = isinstance(chunks, list) and all(isinstance(c, dict) for c in chunks)
        if not ok:
            errors += 1
        if minion_id in sample:
            lowstates[minion_id] = common.canonical(chunks)
    seconds = time.perf_counter() - start
    result = {"minions": len(minions), "seconds": seconds, "setup_seconds": setup,
              "median_per_minion": common.median(per_minion), "errors": errors, "lowstates": lowstates,
              "rss_kib_end": common.current_rss_kib()}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
