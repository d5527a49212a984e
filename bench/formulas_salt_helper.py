"""Real Salt's in-process pillar and lowstate compiles of the ten formulas (runs inside the Salt venv).

Per formula: `salt.pillar.Pillar(opts, grains, id, 'base').compile_pillar()` (what pillar.raw
compiles), and a fresh `salt.state.HighState` with `compile_low_chunks()` (what state.show_lowstate
does, pillar included), --reps times each.  Writes JSON to --out:
{formula: {"pillar": [seconds...], "lowstate": [seconds...], "pillar_out": ..., "lowstate_out": ...}}.
Used by bench/compile_formulas.py; not meant to be run by hand.
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
import formulas_common as fc  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    import salt.config
    import salt.fileclient
    import salt.pillar
    import salt.state

    results = {}
    for name in fc.formulas():
        minion_id, grains, pillar_roots, file_roots = fc.case(name)
        conf = common.write_minion_config(args.scratch / f"salt-{name}", args.scratch / name, pillar_roots,
                                          file_roots, minion_id, grains)
        opts = salt.config.minion_config(str(conf))
        file_client = salt.fileclient.get_file_client(opts)
        entry: dict = {"pillar": [], "lowstate": []}
        for _ in range(args.reps):
            opts["id"], opts["grains"] = minion_id, dict(grains)
            start = time.perf_counter()
            pillar = salt.pillar.Pillar(opts, grains, minion_id, "base")
            try:
                data = pillar.compile_pillar()
            finally:
                pillar.destroy()
            entry["pillar"].append(time.perf_counter() - start)
            entry["pillar_out"] = fc.canonical(data)
        for _ in range(args.reps):
            opts["id"], opts["grains"], opts["pillar"] = minion_id, dict(grains), {}
            start = time.perf_counter()
            try:
                with salt.state.HighState(opts, file_client=file_client) as highstate:
                    highstate.push_active()
                    try:
                        chunks = highstate.compile_low_chunks()
                    finally:
                        highstate.pop_active()
            except Exception as exc:  # noqa: BLE001 - Salt crashes on nginx's lowstate (reconcile_extend)
                chunks = {"__crash__": type(exc).__name__}
            entry["lowstate"].append(time.perf_counter() - start)
            entry["lowstate_out"] = fc.canonical(chunks)
        results[name] = entry
    args.out.write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
