"""saltpan's in-process pillar and lowstate compiles of the ten formulas (runs in the project's venv).

Per formula, what `saltpan compile --show pillar|lowstate` builds: one pillar compiler and one state
compiler (offline function table), then --reps pillar compiles and --reps lowstate compiles (pillar
included, as state.show_lowstate).  Same JSON as formulas_salt_helper.py.
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
import formulas_common as fc  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    import logging

    logging.disable(logging.CRITICAL)  # as the Salt helper: the formulas' log.debug/warning calls stay quiet

    from runtime import pipeline
    from runtime.cli.compile_inputs import compile_config

    results = {}
    for name in fc.formulas():
        minion_id, grains, pillar_roots, file_roots = fc.case(name)
        conf = common.write_minion_config(args.scratch / f"saltpan-{name}", args.scratch / name, pillar_roots,
                                          file_roots, minion_id, grains)
        opts = compile_config(str(conf))
        opts["id"] = minion_id
        pillar_compiler = pipeline.pillar_compiler(opts)
        state_compiler = pipeline.state_compiler(opts)
        entry: dict = {"pillar": [], "lowstate": []}
        for _ in range(args.reps):
            start = time.perf_counter()
            result = pillar_compiler.compile(minion_id, grains)
            entry["pillar"].append(time.perf_counter() - start)
            entry["pillar_out"] = fc.canonical(result.pillar)
        for _ in range(args.reps):
            start = time.perf_counter()
            pillar = pillar_compiler.compile(minion_id, grains)
            low = pipeline.compile_states(opts, minion_id, grains, pillar.pillar, "lowstate",
                                          compiler=state_compiler)
            entry["lowstate"].append(time.perf_counter() - start)
            entry["lowstate_out"] = fc.canonical([e.salt_message() for e in low.errors] if low.errors else low.data)
        results[name] = entry
    args.out.write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
