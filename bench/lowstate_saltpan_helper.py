"""saltpan's in-process lowstate compile over the bench fleet (runs in the project's venv).

What ``saltpan compile --show lowstate`` does for one minion, for every minion in
turn: compile the minion's pillar, then its top, high data and ordered low chunks
with that pillar.  One pillar compiler and one state compiler (built as the CLI
builds them) serve the whole fleet.

Writes JSON to --out: {"minions", "seconds", "errors", "lowstates": {id: chunks for --sample}}.
Used by bench/compile_lowstate.py; ``--profile FILE`` writes a cProfile of the loop.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
import common  # noqa: E402


def build(fleet: common.Fleet, scratch: Path):
    """opts, pillar compiler and state compiler, from a config naming the fleet's trees."""
    from runtime import pipeline
    from runtime.cli.options import offline_config

    opts = offline_config(str(common.write_fleet_config(scratch / "saltpan-conf", scratch, fleet)))
    return opts, pipeline.pillar_compiler(opts), pipeline.state_compiler(opts)


def compile_all(opts, pillar_compiler, state_compiler, minions, sample: set[str]) -> tuple[int, dict]:
    from runtime import pipeline

    errors = 0
    lowstates = {}
    for minion_id, grains in minions:
        opts["id"] = minion_id
        pillar = pillar_compiler.compile(minion_id, grains)
        if pillar.errors or pillar.pillar.get("_errors"):
            errors += 1
            continue
        result = pipeline.compile_states(opts, minion_id, grains, pillar.pillar, "lowstate", compiler=state_compiler)
        if result.errors:
            errors += 1
            if minion_id in sample:
                lowstates[minion_id] = [e.salt_message() for e in result.errors]
            continue
        if minion_id in sample:
            lowstates[minion_id] = common.canonical(result.data)
    return errors, lowstates


def main() -> int:
    parser = argparse.ArgumentParser()
    common.add_helper_args(parser)
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the compile loop here")
    args = parser.parse_args()

    fleet, minions, sample = common.helper_minions(args, args.scratch)
    setup_start = time.perf_counter()
    opts, pillar_compiler, state_compiler = build(fleet, args.scratch)
    setup = time.perf_counter() - setup_start
    start = time.perf_counter()
    errors, lowstates = common.profiled(
        args.profile, lambda: compile_all(opts, pillar_compiler, state_compiler, minions, sample))
    seconds = time.perf_counter() - start
    result = {"minions": len(minions), "seconds": seconds, "setup_seconds": setup, "errors": errors,
              "lowstates": lowstates, "rss_kib_end": common.current_rss_kib()}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
