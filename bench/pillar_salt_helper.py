"""Real Salt's in-process pillar compile over the bench fleet (runs inside the Salt venv).

Builds minion opts with ``salt.config.minion_config`` (file_client local,
pillar_roots = the fleet's pillar dir, every Salt directory under a scratch
dir) and calls ``salt.pillar.Pillar(opts, grains, minion_id, 'base').compile_pillar()``
for each minion in turn, as a master or ``salt-call --local`` does.

Writes JSON to --out: {"minions", "seconds", "per_minion", "errors", "pillars": {id: pillar for --sample}}.
Used by bench/compile_pillar.py; not meant to be run by hand.
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


def minion_opts(scratch: Path, fleet: common.Fleet) -> dict:
    import salt.config

    return salt.config.minion_config(str(common.write_fleet_config(scratch / "salt-conf", scratch, fleet)))


def main() -> int:
    parser = argparse.ArgumentParser()
    common.add_helper_args(parser, "comma-separated minion ids whose pillar to write out")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    import salt.pillar

    fleet, minions, sample = common.helper_minions(args, args.scratch)
    setup_start = time.perf_counter()
    opts = minion_opts(args.scratch, fleet)
    setup = time.perf_counter() - setup_start
    pillars = {}
    errors = 0
    per_minion = []
    start = time.perf_counter()
    for minion_id, grains in minions:
        one = time.perf_counter()
        opts["id"] = minion_id
        opts["grains"] = grains
        pillar = salt.pillar.Pillar(opts, grains, minion_id, "base")
        try:
            data = pillar.compile_pillar()
        finally:
            pillar.destroy()
        per_minion.append(time.perf_counter() - one)
        if data.get("_errors"):
            errors += 1
        if minion_id in sample:
            pillars[minion_id] = common.canonical(data)
    seconds = time.perf_counter() - start
    result = {"minions": len(minions), "seconds": seconds, "setup_seconds": setup,
              "median_per_minion": common.median(per_minion), "errors": errors, "pillars": pillars,
              "rss_kib_end": common.current_rss_kib()}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
