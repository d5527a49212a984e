"""`saltpan compile --all` over the 1,000 minions of the bench fleet, beside real Salt compiling the same minions.

saltpan: the whole command as a user runs it, a fresh process each round:

    python -m runtime compile -c CONF --all --fleet FLEET --show pillar|lowstate --out-dir DIR

(the fleet file is bench-fleet/grains.json with ``__SANDBOX__`` replaced per minion; one worker per
core unless --jobs), timed from start to exit, with the peak RSS of its largest process (wait4) and
the peak of the whole process tree's RSS and PSS (sampled from /proc every 20 ms).

Salt: a loop over real Salt's in-process compile of the same minions, in the Salt venv
(bench/fleet_salt_helper.py: ``Pillar.compile_pillar()``, plus ``HighState.compile_low_chunks()``
for lowstate), one process, timed over the loop only (its start-up and imports are not counted).

Both run in the same invocation, alternating; saltpan's figure is the median of its rounds.  The
results of a sample of minions are compared (saltpan's --out-dir file against Salt's data).

    .venv/bin/python bench/fleet.py                         # pillar and lowstate, rewrites its RESULTS.md section
    .venv/bin/python bench/fleet.py --show pillar --limit 100 --no-results   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import salt_venv  # noqa: E402

SECTION = "Fleet compile: saltpan compile --all (bench/fleet.py)"
SAMPLE = ["web-0001", "app-0008", "db-0015", "cache-0022", "lb-0029", "mon-0036", "bkp-0043", "web-0101"]


@dataclass
class TreeRun:
    seconds: float
    cpu_seconds: float  # user + system time of the process and every worker it reaped
    returncode: int
    largest_rss_kib: int  # peak RSS of the largest single process (wait4)
    tree_rss_kib: int  # peak of the summed RSS of the process tree (sampled)
    tree_pss_kib: int  # peak of the summed PSS of the process tree (sampled; shared pages counted once)
    stderr: str


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as fh:
                    todo += [int(child) for child in fh.read().split()]
        except OSError:
            continue
    return pids


def _memory(pids: list[int]) -> tuple[int, int]:
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return rss, pss


def run_tree(argv: list[str], cwd: str) -> TreeRun:
    """Run argv to completion, sampling the memory of its whole process tree."""
    peaks = [0, 0]
    done = threading.Event()
    with open(os.devnull, "wb") as devnull, open(Path(cwd) / "stderr.txt", "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=devnull, stderr=err, cwd=cwd, env=common.bench_env())

        def sample() -> None:
            while not done.is_set():
                rss, pss = _memory(_tree(proc.pid))
                peaks[0], peaks[1] = max(peaks[0], rss), max(peaks[1], pss)
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            sampler.join()
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return TreeRun(seconds, usage.ru_utime + usage.ru_stime, proc.returncode, int(usage.ru_maxrss), peaks[0], peaks[1],
                   (Path(cwd) / "stderr.txt").read_text(encoding="utf-8", errors="replace"))


def prepare(fleet: common.Fleet, scratch: Path, limit: int) -> tuple[Path, Path, list[str]]:
    """A config both read and the fleet file saltpan reads; the minion ids."""
    minions = common.load_minions(fleet, scratch / "sandbox")
    if limit:
        minions = minions[:limit]
    fleet_file = scratch / "fleet.json"
    fleet_file.write_text(json.dumps({"minions": [{"id": m, "grains": g} for m, g in minions]}), encoding="utf-8")
    conf = common.write_fleet_config(scratch / "conf", scratch, fleet)
    return conf, fleet_file, [m for m, _ in minions]


def run_saltpan(conf: Path, fleet_file: Path, show: str, out_dir: Path, jobs: int | None) -> TreeRun:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    argv = [sys.executable, "-m", "runtime", "compile", "-c", str(conf), "--all", "--fleet", str(fleet_file),
            "--show", show, "--out-dir", str(out_dir)]
    if jobs:
        argv += ["--jobs", str(jobs)]
    run = run_tree(argv, str(out_dir.parent))
    if run.returncode != 0:
        raise SystemExit(f"saltpan compile --all failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return run


def run_salt(python: Path, fleet: common.Fleet, scratch: Path, show: str, limit: int, sample: list[str]) -> dict:
    out = scratch / f"salt-{show}.json"
    argv = [str(python), str(common.BENCH_DIR / "fleet_salt_helper.py"), "--fleet-dir", str(fleet.root),
            "--scratch", str(scratch), "--out", str(out), "--show", show, "--sample", ",".join(sample)]
    if limit:
        argv += ["--limit", str(limit)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=common.bench_env(), check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the Salt helper failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


def compare(out_dir: Path, salt: dict) -> list[str]:
    problems = []
    for minion_id, theirs in salt["results"].items():
        ours = common.canonical(json.loads((out_dir / f"{minion_id}.json").read_text(encoding="utf-8")))
        if ours != theirs:
            problems.append(f"{minion_id}: " + "; ".join(common.diff_paths(ours, theirs, limit=3)))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    parser.add_argument("--show", choices=["pillar", "lowstate", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=3, help="saltpan runs per view (median; default 3)")
    parser.add_argument("--salt-rounds", type=int, default=1, help="Salt loops per view (default 1: ~2-3 min each)")
    parser.add_argument("--jobs", type=int, default=None, help="saltpan --jobs (default: one per core)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N minions (a quick look)")
    parser.add_argument("--no-results", action="store_true", help="do not rewrite bench/RESULTS.md")
    args = parser.parse_args(argv)

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.WORK_DIR / "fleet"
    scratch.mkdir(parents=True, exist_ok=True)
    conf, fleet_file, minion_ids = prepare(fleet, scratch, args.limit)
    python = salt_venv.python_of(salt_venv.ensure())
    sample = [m for m in SAMPLE if m in minion_ids] or minion_ids[:3]
    shows = ["pillar", "lowstate"] if args.show == "both" else [args.show]
    rows, notes = [], []
    for show in shows:
        out_dir = scratch / f"out-{show}"
        ours: list[TreeRun] = []
        theirs: list[dict] = []
        for round_number in range(max(args.rounds, args.salt_rounds)):
            if round_number < args.rounds:
                ours.append(run_saltpan(conf, fleet_file, show, out_dir, args.jobs))
                print(f"{show}: saltpan {ours[-1].seconds:.2f}s", file=sys.stderr)
            if round_number < args.salt_rounds:
                theirs.append(run_salt(python, fleet, scratch, show, args.limit, sample))
                print(f"{show}: Salt {theirs[-1]['seconds']:.1f}s", file=sys.stderr)
        problems = compare(out_dir, theirs[-1])
        errors = sum(s["errors"] for s in theirs)
        wall = common.median([r.seconds for r in ours])
        salt_seconds = common.median([s["seconds"] for s in theirs])
        count = len(minion_ids)
        ratio = salt_seconds / wall
        best = min(r.seconds for r in ours)
        cpu = common.median([r.cpu_seconds for r in ours])
        salt_cpu = common.median([s["cpu_seconds"] for s in theirs])
        jobs = args.jobs or len(os.sched_getaffinity(0))
        rows.append([f"`compile --all --show {show}`, {count} minions, wall time (s)", f"{wall:.2f}",
                     f"{salt_seconds:.1f}", f"**{ratio:.0f}x**", common.today(), common.machine()])
        rows.append([f"  minions/s ({jobs} worker processes vs Salt's loop)", f"{count / wall:.0f}",
                     f"{count / salt_seconds:.1f}", f"{ratio:.0f}x", common.today(), common.machine()])
        rows.append(["  fastest saltpan round (s)", f"{best:.2f}", f"{salt_seconds:.1f}",
                     f"{salt_seconds / best:.0f}x", common.today(), common.machine()])
        rows.append(["  CPU time, all processes (s)", f"{cpu:.2f}", f"{salt_cpu:.1f}",
                     f"{salt_cpu / cpu:.0f}x", common.today(), common.machine()])
        largest = common.median([r.largest_rss_kib for r in ours])
        tree_pss = common.median([r.tree_pss_kib for r in ours])
        tree_rss = common.median([r.tree_rss_kib for r in ours])
        salt_rss = max(s["rss_kib_peak"] for s in theirs)
        rows.append([f"  peak RSS, largest process (saltpan: whole tree RSS {common.mib(tree_rss)}, "
                     f"PSS {common.mib(tree_pss)})", common.mib(largest), common.mib(salt_rss), "-",
                     common.today(), common.machine()])
        verdict = (f"saltpan's output equals Salt's for {len(theirs[-1]['results'])} sampled minions "
                   f"({', '.join(sorted(theirs[-1]['results']))})" if not problems
                   else f"DIFFERENT from Salt for {len(problems)} sampled minions: {'; '.join(problems)}")
        busy = salt_cpu / salt_seconds
        notes.append(f"- `--show {show}`: saltpan median of {len(ours)} runs "
                     f"({', '.join(f'{r.seconds:.2f}' for r in ours)} s); Salt {len(theirs)} loop(s), "
                     f"{errors} Salt errors; Salt's loop was on a CPU {busy:.0%} of its wall time (against its "
                     f"CPU time, {salt_cpu:.1f} s, as if it had a core to itself, the wall ratio is "
                     f"{salt_cpu / wall:.0f}x). {verdict}.")
        print(f"{show}: saltpan {wall:.2f}s vs Salt {salt_seconds:.1f}s = {ratio:.0f}x; {verdict}", file=sys.stderr)
    load = os.getloadavg()
    body = common.table(["workload", "saltpan", "Salt 3008.3", "ratio", "date", "machine"], rows)
    body += "\n\n" + "\n".join(notes) + "\n"
    body += (
        "- saltpan: the whole `saltpan compile -c CONF --all --fleet FLEET --show VIEW --out-dir DIR` process "
        "from start to exit (start-up, fleet file, forking the workers, compiling, one JSON file per minion "
        "written), one worker process per core, a fresh process each round.\n"
        "- Salt: a loop in one process over `salt.pillar.Pillar(opts, grains, id, 'base').compile_pillar()` "
        "(and for lowstate `salt.state.HighState(opts, initial_pillar=pillar).compile_low_chunks()`, what "
        "`state.show_lowstate` runs) for the same minions, opts from `salt.config.minion_config` "
        "(file_client local); only the loop is timed (Salt's imports and start-up are not counted). Salt "
        "has no parallel fleet compile: the ratio includes saltpan's parallelism.\n"
        "- The ratio is the median saltpan round against Salt's loop; the fastest round and the CPU time (user + "
        "system of every process, from wait4; Salt: the loop's process time) are shown beside it because a "
        "2-second run on a shared machine is at the mercy of other work, while Salt's minutes-long loop "
        "averages it out.\n"
        f"- Peak memory: saltpan's largest process from wait4; the tree's RSS and PSS sampled every 20 ms "
        f"(PSS counts pages the forked workers share once). Load average at the end: "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (the machine is shared).\n")
    if not args.no_results:
        common.update_results(SECTION, body)
        print(f"wrote the '{SECTION}' section of {common.RESULTS}", file=sys.stderr)
    else:
        print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
