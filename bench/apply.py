"""Masterless state.apply: saltpan against real Salt 3008.3 on the bench fleet, in the same run.

    .venv/bin/python bench/apply.py                 # full run (~2 min), updates bench/RESULTS.md
    .venv/bin/python bench/apply.py --runs 2 --no-results

Workload: the bench fleet's state tree for web-0001 (28 states: directories, files from
pillar and from a ``salt://`` Jinja template, file.serialize, cmd.run with unless / creates /
onchanges, requisites), whole process:

    saltpan call --local -c <conf> state.apply --out json
    salt-call --local -c <conf> state.apply --out json --retcode-passthrough

Each implementation has its own config (same trees, same grains, same ``sandbox`` grain)
and its own ``root_dir`` (cache, logs); both use the one sandbox directory, in turn, so that
their results and files compare as they are.  One *round* per implementation
is: empty the sandbox and the cache, run state.apply (the **first run**: every state
changes something), run it again (the **second run**: nothing left to change).  Rounds
alternate which implementation goes first; figures are medians over the rounds, after one
untimed round each (page cache, .pyc files).

Checks: every state succeeds in both runs for both; both report the same state ids with
the same result, and the same states changed, on both runs; the second run changes
nothing; and the two sandboxes end up with the same files, modes and contents (files a
cmd.run writes the time into are compared by line count).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import salt_venv  # noqa: E402
from compile_pillar import shown  # noqa: E402

SECTION = "Masterless state.apply (bench/apply.py)"
MINION = "web-0001"
IMPLS = ("saltpan", "salt")
TIMESTAMPED = {"var/lib/initialized", "var/log/nginx/reload.log"}  # cmd.run writes `date` into these


def setup(fleet: common.Fleet, scratch: Path, saltpan_bin: Path) -> dict[str, dict[str, Any]]:
    """Per implementation: its config, sandbox, state root and argv."""
    salt_call = salt_venv.venv_dir() / "bin" / "salt-call"
    out: dict[str, dict[str, Any]] = {}
    for impl in IMPLS:
        base = scratch / impl
        grains = dict(common.load_minions(fleet, scratch / "sandbox"))[MINION]
        grains.pop("id", None)
        config = common.write_fleet_config(base / "conf", base, fleet, MINION, grains)
        if impl == "saltpan":
            argv = [str(saltpan_bin), "call", "--local", "-c", str(config), "state.apply", "--out", "json"]
        else:
            argv = [str(salt_call), "--local", "-c", str(config.parent), "state.apply", "--out", "json",
                    "--retcode-passthrough"]
        out[impl] = {"argv": argv, "sandbox": Path(grains["sandbox"]), "root": base / "salt-root"}
    return out


def fresh(work: dict[str, Any]) -> None:
    """An empty sandbox and no cache: what a newly installed minion starts from."""
    for path in (work["sandbox"], work["root"]):
        shutil.rmtree(path, ignore_errors=True)
    work["sandbox"].mkdir(parents=True)


def apply_once(work: dict[str, Any], capture: Path) -> dict[str, Any]:
    run = common.run_process(work["argv"], cwd=str(common.REPO_DIR), timeout=600, capture_dir=capture)
    try:
        data = json.loads(run.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(work['argv'])} printed no JSON (exit {run.returncode}):\n"
                         f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}") from None
    states = data.get("local", data)
    if run.returncode != 0 or not isinstance(states, dict):
        raise SystemExit(f"{' '.join(work['argv'])} failed (exit {run.returncode}):\n"
                         f"{json.dumps(states, indent=1)[:3000]}\n{run.stderr[-2000:]}")
    return {"seconds": run.seconds, "rss": run.max_rss_kib, "states": states}


def summary(states: dict[str, Any]) -> dict[str, tuple[Any, bool]]:
    """{state key: (result, changed)}."""
    return {key: (value.get("result"), bool(value.get("changes"))) for key, value in states.items()}


def tree(root: Path) -> dict[str, Any]:
    """Relative path -> (kind, mode, content digest); files holding a timestamp by their line count."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        info = path.lstat()
        mode = oct(stat.S_IMODE(info.st_mode))
        if stat.S_ISDIR(info.st_mode):
            out[rel] = ("dir", mode)
        elif rel in TIMESTAMPED:
            out[rel] = ("lines", mode, len(path.read_bytes().splitlines()))
        else:
            out[rel] = ("file", mode, hashlib.sha256(path.read_bytes()).hexdigest()[:16])
    return out


def check(first: dict[str, dict], second: dict[str, dict], trees: dict[str, dict]) -> list[str]:
    problems: list[str] = []
    for impl in IMPLS:
        for label, run in (("first", first[impl]), ("second", second[impl])):
            failed = [k for k, (result, _) in summary(run["states"]).items() if result is not True]
            if failed:
                problems.append(f"{impl} {label} run: {len(failed)} state(s) did not succeed: {failed[:3]}")
        changed = [k for k, (_, ch) in summary(second[impl]["states"]).items() if ch]
        if changed:
            problems.append(f"{impl} second run changed {len(changed)} state(s): {changed[:3]}")
    for label, runs in (("first", first), ("second", second)):
        ours, theirs = summary(runs["saltpan"]["states"]), summary(runs["salt"]["states"])
        for key in sorted(set(ours) | set(theirs)):
            if key not in theirs:
                problems.append(f"{label} run: {key} only in saltpan's result")
            elif key not in ours:
                problems.append(f"{label} run: {key} only in Salt's result")
            elif ours[key] != theirs[key]:
                problems.append(f"{label} run: {key}: saltpan (result, changed) {ours[key]} != Salt {theirs[key]}")
    ours, theirs = trees["saltpan"], trees["salt"]
    for rel in sorted(set(ours) | set(theirs)):
        if ours.get(rel) != theirs.get(rel):
            problems.append(f"sandbox {rel}: saltpan {ours.get(rel)} != Salt {theirs.get(rel)}")
    return problems


def report(args: argparse.Namespace, results: dict[str, dict[str, list]], counts: dict[str, Any],
           work: dict[str, dict], problems: list[str]) -> str:
    date, machine = common.today(), common.machine()
    med = {impl: {k: common.median(v) for k, v in results[impl].items()} for impl in IMPLS}
    rows = []
    verdicts = []
    for label in ("first", "second"):
        sp, salt = med["saltpan"][label], med["salt"][label]
        rows.append([f"`state.apply` web-0001 ({counts['states']} states), {label} run, whole process (s)",
                     f"{sp:.3f}", f"{salt:.3f}", f"{salt / sp:.1f}x faster", date, machine])
        verdicts.append(f"{label} run {salt / sp:.1f}x")
    rows.append(["peak RSS of that process (first run)", common.mib(med["saltpan"]["first_rss"]),
                 common.mib(med["salt"]["first_rss"]),
                 f"{med['salt']['first_rss'] / med['saltpan']['first_rss']:.0f}x less", date, machine])
    met = all(med["salt"][k] / med["saltpan"][k] >= 6 for k in ("first", "second"))
    lines = [common.table(["workload", "saltpan", "Salt 3008.3", "ratio", "date", "machine"], rows), ""]
    lines.append(f"- Target (issue 4): at least 6x faster on both runs; **{'met' if met else 'missed'}** "
                 f"({', '.join(verdicts)}).")
    lines.append(f"- Medians of {args.runs} alternating rounds, each after one untimed round per implementation; "
                 f"a round is a first run on an empty sandbox and an empty cache, then a second run. "
                 f"Per-round first / second run (s): saltpan "
                 + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(results['saltpan']['first'],
                                                               results['saltpan']['second'], strict=True))
                 + "; Salt " + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(results['salt']['first'],
                                                                          results['salt']['second'], strict=True))
                 + f". Load average (1 min) at start / end: {args.load_start:.1f} / {os.getloadavg()[0]:.1f} "
                 f"({os.cpu_count()} cores).")
    lines.append(f"- `{shown(work['saltpan']['argv'])}` against `{shown(work['salt']['argv'])}`; "
                 "same trees and grains, each with its own sandbox and root_dir; bytecode caching on.")
    lines.append(f"- First run: {counts['first_changed']} of {counts['states']} states changed something "
                 f"(both); second run: {counts['second_changed']}.")
    if problems:
        lines.append(f"- Comparison: **{len(problems)} difference(s)**:")
        lines += [f"  - {p}" for p in problems[:20]]
    else:
        lines.append("- Comparison: every state succeeded on both runs for both; both report the same states with "
                     "the same result and the same states changed on each run; the two sandboxes hold the same "
                     "files with the same modes and contents (files cmd.run writes `date` into: same line count).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    common.add_load_args(parser)
    parser.add_argument("--runs", type=int, default=9, help="alternating rounds per implementation (default 9)")
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    args = parser.parse_args(argv)
    common.wait_quiet(args.wait_load)
    args.load_start = os.getloadavg()[0]

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.fresh_scratch("apply")
    salt_venv.salt_python()
    work = setup(fleet, scratch, Path(sys.executable).parent / "saltpan")
    print(f"bench fleet: {fleet.root}; minion {MINION}; machine: {common.machine()}; "
          f"load average {args.load_start:.1f}")

    for impl in IMPLS:  # untimed warm-up round
        fresh(work[impl])
        apply_once(work[impl], scratch)
        apply_once(work[impl], scratch)

    results: dict[str, dict[str, list]] = {impl: {"first": [], "second": [], "first_rss": []} for impl in IMPLS}
    first: dict[str, dict] = {}
    second: dict[str, dict] = {}
    trees: dict[str, dict] = {}
    for index in range(args.runs):
        order = IMPLS if index % 2 == 0 else tuple(reversed(IMPLS))
        for impl in order:
            fresh(work[impl])
            one = apply_once(work[impl], scratch)
            two = apply_once(work[impl], scratch)
            results[impl]["first"].append(one["seconds"])
            results[impl]["second"].append(two["seconds"])
            results[impl]["first_rss"].append(one["rss"])
            first[impl], second[impl] = one, two
            trees[impl] = tree(work[impl]["sandbox"])
            print(f"round {index + 1}/{args.runs} {impl:8}: first {one['seconds']:.3f} s, "
                  f"second {two['seconds']:.3f} s ({len(one['states'])} states, peak RSS {common.mib(one['rss'])})",
                  flush=True)

    problems = check(first, second, trees)
    counts = {"states": len(first["saltpan"]["states"]),
              "first_changed": sum(ch for _, ch in summary(first["saltpan"]["states"]).values()),
              "second_changed": sum(ch for _, ch in summary(second["saltpan"]["states"]).values())}
    text = report(args, results, counts, work, problems)
    common.publish(SECTION, text, not args.no_results)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
