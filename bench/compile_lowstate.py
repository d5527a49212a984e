"""Lowstate compile: saltpan against real Salt 3008.3 on the bench fleet, in the same run.

    .venv/bin/python bench/compile_lowstate.py                 # full run (~10 min), updates bench/RESULTS.md
    .venv/bin/python bench/compile_lowstate.py --rounds 1 --limit 50 --cli-runs 3 --no-results
    .venv/bin/python bench/compile_lowstate.py --saltpan-only --profile /tmp/lowstate.prof

Workloads, each measured for both implementations, alternating which goes first:

1. in-process lowstate of all 1,000 minions of the bench fleet, one process, one minion after
   the other, pillar compiled too (as ``state.show_lowstate`` does): saltpan's pillar and state
   compilers (built once, as ``saltpan compile`` builds them) against a new
   ``salt.state.HighState`` per minion (file_client local, opts and file client shared) and
   its ``compile_low_chunks()``, inside the Salt venv (bench/salt_venv.py; see
   bench/lowstate_salt_helper.py for why one HighState cannot serve several minions).
   Throughput counts the compile loop only; memory is each process's peak RSS.
2. whole process for one minion (web-0001 on the bench fleet's tree):
   ``saltpan compile --show lowstate`` against ``salt-call --local state.show_lowstate``.

Both implementations must produce the same lowstate: the script compares saltpan's with
Salt's for a sample of minions, web-0001's with bench-fleet/salt-reference/, and the two
CLIs' outputs with each other, and prints every difference.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import salt_venv  # noqa: E402
from compile_pillar import (  # noqa: E402
    compare_samples,
    comparison_lines,
    in_process_line,
    median_run,
    ratio,
    round_line,
    round_median,
    run_cli,
    run_helper,
    shown,
)

SECTION = "Lowstate compile (bench/compile_lowstate.py)"
REFERENCE_MINION = "web-0001"


def compare_lowstates(saltpan: dict[str, Any], salt: dict[str, Any] | None, fleet: common.Fleet,
                      scratch: Path) -> list[str]:
    """Differences between saltpan's and Salt's lowstates (and Salt's stored reference, which must be there)."""
    problems = compare_samples("lowstate", saltpan, salt, fleet, scratch)
    ref_file = fleet.reference_dir / f"lowstate-{REFERENCE_MINION}.json"
    if REFERENCE_MINION in saltpan and not ref_file.exists():
        problems.append(f"{ref_file} is missing: web-0001 not checked against Salt's reference")
    return problems


# -- workload 2: whole process for one minion -------------------------------------------------

def cli_workload(fleet: common.Fleet, scratch: Path, saltpan_bin: Path) -> dict[str, Any]:
    minion_id = REFERENCE_MINION
    grains = dict(common.load_minions(fleet, scratch))[minion_id]
    grains.pop("id", None)
    config = common.write_fleet_config(scratch / "cli-conf", scratch, fleet, minion_id, grains)
    salt_call = salt_venv.venv_dir() / "bin" / "salt-call"
    return {
        "minion": minion_id,
        "saltpan": [str(saltpan_bin), "compile", "--config", str(config), "--minion", minion_id,
                    "--show", "lowstate", "--out", "json"],
        "salt": [str(salt_call), "--local", "-c", str(config.parent), "state.show_lowstate", "--out", "json"],
    }


# -- report ------------------------------------------------------------------------------------

def rss_ratio(saltpan: float | None, salt: float | None) -> str:
    if not saltpan or not salt:
        return "-"
    if abs(salt / saltpan - 1) < 0.15:
        return "about the same"
    return f"{salt / saltpan:.1f}x less" if salt > saltpan else f"{saltpan / salt:.1f}x more"


def report(args: argparse.Namespace, rounds: list[dict[str, Any]], cli: dict[str, Any] | None,
           workload: dict[str, Any] | None, problems: list[str], sample: list[str]) -> str:
    def med(key: str, field: str) -> float | None:
        return round_median(rounds, key, field)

    date, machine = common.today(), common.machine()
    sp_rate, salt_rate = med("saltpan", "rate"), med("salt", "rate")
    sp_rss, salt_rss = med("saltpan", "max_rss_kib"), med("salt", "max_rss_kib")
    n = rounds[0]["saltpan"]["minions"]
    rows = [
        [f"lowstate in-process (pillar compiled too), {n:,} minions, 1 process (minions/s)", f"{sp_rate:.0f}",
         f"{salt_rate:.1f}" if salt_rate else "-", ratio(sp_rate, salt_rate), date, machine],
        ["peak RSS of that process", common.mib(sp_rss), common.mib(salt_rss) if salt_rss else "-",
         rss_ratio(sp_rss, salt_rss), date, machine],
    ]
    if cli:
        rows.append(["whole process, web-0001: `saltpan compile --show lowstate` vs "
                     "`salt-call --local state.show_lowstate` (s)", f"{cli['saltpan']:.3f}", f"{cli['salt']:.3f}",
                     ratio(cli["salt"], cli["saltpan"]) + " faster", date, machine])
        rows.append(["peak RSS of that process", common.mib(cli["saltpan_rss"]), common.mib(cli["salt_rss"]),
                     "-", date, machine])
    lines = [common.table(["workload", "saltpan", "Salt 3008.3", "ratio", "date", "machine"], rows), ""]
    lines.append("- Target (issue 3): at least 20x Salt in-process; "
                 + (f"**{'met' if sp_rate / salt_rate >= 20 else 'missed'}** ({sp_rate / salt_rate:.0f}x)."
                    if salt_rate else "not measured."))
    lines.append(in_process_line(args, rounds))
    per_round = [r["saltpan"]["rate"] / r["salt"]["rate"] for r in rounds if r.get("salt")]
    if per_round:
        lines.append("- Ratio per round: " + ", ".join(f"{x:.0f}x" for x in per_round)
                     + f"; load average (1 min) at start / end of the run: {args.load_start:.1f} / "
                     f"{os.getloadavg()[0]:.1f} ({os.cpu_count()} cores).")
    if salt_rate:
        lines.append("- Salt: per minion, a new `salt.state.HighState(opts, file_client=...)` (which compiles the "
                     "minion's pillar, as `state.show_lowstate` does) and its `compile_low_chunks()`; opts from "
                     "`salt.config.minion_config` (file_client local) and one local file client shared by the "
                     "fleet. One HighState cannot be reused: Salt 3008's copy-on-write opts give each loader its own "
                     "snapshot of grains and pillar (a reused one renders later minions with the first one's pillar).")
        lines.append("- saltpan: per minion, `PillarCompiler.compile` then `pipeline.compile_states(..., 'lowstate')` "
                     "with one pillar compiler and one state compiler for the fleet (what `saltpan compile` builds).")
    if cli and workload:
        lines.append(f"- Whole process: median of {args.cli_runs} alternating runs each after one untimed warm-up, "
                     f"bytecode caching on; `{shown(workload['saltpan'])}` against `{shown(workload['salt'])}`.")
    lines += comparison_lines("lowstate", problems, sample, cli)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    common.add_load_args(parser)
    parser.add_argument("--rounds", type=int, default=3, help="alternating in-process rounds (default 3)")
    parser.add_argument("--cli-runs", type=int, default=10, help="whole-process runs of each CLI (default 10)")
    parser.add_argument("--saltpan-repeats", type=int, default=3,
                        help="fresh saltpan processes per round, the median kept (default 3)")
    parser.add_argument("--sample", type=int, default=20, help="minions whose lowstates are compared (default 20)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N minions (quick checks)")
    parser.add_argument("--saltpan-only", action="store_true", help="skip Salt (no ratio; RESULTS.md untouched)")
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    parser.add_argument("--profile", type=Path, default=None,
                        help="also write a cProfile of one saltpan compile loop to this file")
    args = parser.parse_args(argv)
    common.wait_quiet(args.wait_load)
    args.load_start = os.getloadavg()[0]

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.fresh_scratch("compile_lowstate")
    salt_python = None if args.saltpan_only else salt_venv.salt_python()
    saltpan_python = Path(sys.executable)
    saltpan_bin = saltpan_python.parent / "saltpan"
    ids = [minion_id for minion_id, _ in common.load_minions(fleet, scratch)]
    if args.limit:
        ids = ids[: args.limit]
    sample = common.sample_ids(ids, args.sample, always=[REFERENCE_MINION])
    print(f"bench fleet: {fleet.root} ({len(ids)} minions); machine: {common.machine()}; "
          f"load average {args.load_start:.1f}")

    rounds: list[dict[str, Any]] = []
    for index in range(args.rounds):
        result: dict[str, Any] = {}
        steps = ["saltpan", "salt"] if index % 2 == 0 else ["salt", "saltpan"]
        for step in steps:
            if step == "salt" and salt_python is None:
                continue
            out = scratch / f"{step}-{index}.json"
            if step == "salt":
                result[step] = run_helper(salt_python, "lowstate_salt_helper.py", fleet, scratch, out, sample,
                                          args.limit)
            else:
                result[step] = median_run(partial(run_helper, saltpan_python, "lowstate_saltpan_helper.py", fleet,
                                                  scratch, out, sample, args.limit),
                                          args.saltpan_repeats, "lowstates")
            print(round_line(index, args.rounds, step, result[step]), flush=True)
        rounds.append(result)

    problems = compare_lowstates(rounds[0]["saltpan"]["lowstates"],
                                 rounds[0]["salt"]["lowstates"] if "salt" in rounds[0] else None, fleet, scratch)
    for step in ("saltpan", "salt"):
        if rounds[0].get(step, {}).get("errors"):
            problems.append(f"{step}: {rounds[0][step]['errors']} minion(s) failed to compile")
    cli = workload = None
    if not args.saltpan_only and args.cli_runs > 0:
        workload = cli_workload(fleet, scratch, saltpan_bin)
        cli = run_cli(workload, args.cli_runs)
        print(f"whole process, {workload['minion']}: saltpan {cli['saltpan']:.3f} s "
              f"({common.mib(cli['saltpan_rss'])}), salt-call {cli['salt']:.3f} s ({common.mib(cli['salt_rss'])})")
        problems += [f"CLI {workload['minion']}: {d}" for d in cli["diffs"]]

    if args.profile:
        run_helper(saltpan_python, "lowstate_saltpan_helper.py", fleet, scratch, scratch / "profile.json", [],
                   args.limit, ["--profile", str(args.profile)])
        print(f"profile written to {args.profile} (python -m pstats {args.profile})")

    text = report(args, rounds, cli, workload, problems, sample)
    common.publish(SECTION, text, not args.saltpan_only and not args.no_results)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
