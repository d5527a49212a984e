"""Real Salt's in-process compile of the bench fleet, minion after minion (runs inside the Salt venv).

``--show pillar``: ``salt.pillar.Pillar(opts, grains, id, 'base').compile_pillar()`` per minion, as a
master or ``salt-call --local`` does.  ``--show lowstate``: that, then
``salt.state.HighState(opts, initial_pillar=pillar).compile_low_chunks()`` (what
``state.show_lowstate`` runs).  Opts from ``salt.config.minion_config`` (file_client local, the
fleet's pillar and state trees, every Salt directory under --scratch).

Writes JSON to --out: {"minions", "seconds", "errors", "rss_kib_peak", "results": {id: data for --sample}}.
Used by bench/fleet.py; not meant to be run by hand.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from pillar_salt_helper import minion_opts  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    common.add_helper_args(parser, "comma-separated minion ids whose result to write out")
    parser.add_argument("--show", choices=["pillar", "lowstate"], default="pillar")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    import salt.pillar
    import salt.state

    fleet, minions, sample = common.helper_minions(args, args.scratch / "sandbox")
    opts = minion_opts(args.scratch, fleet)
    results = {}
    errors = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    for minion_id, grains in minions:
        opts["id"] = minion_id
        opts["grains"] = grains
        pillar_obj = salt.pillar.Pillar(opts, grains, minion_id, "base")
        try:
            pillar = pillar_obj.compile_pillar()
        finally:
            pillar_obj.destroy()
        data = pillar
        if pillar.get("_errors"):
            errors += 1
        elif args.show == "lowstate":
            # a copy: opts["pillar"] left behind would leak into the next minion's pillar templates
            state_opts = dict(opts, pillar=pillar)
            highstate = salt.state.HighState(state_opts, initial_pillar=pillar)
            try:
                data = highstate.compile_low_chunks()
            finally:
                highstate.destroy()
            if data and isinstance(data[0], str):  # a list of error messages
                errors += 1
        if minion_id in sample:
            results[minion_id] = common.canonical(data)
    seconds = time.perf_counter() - start
    out = {"minions": len(minions), "seconds": seconds, "cpu_seconds": time.process_time() - cpu_start, "errors": errors, "results": results,
           "rss_kib_peak": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}
    args.out.write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
