"""Jobs through a master: saltpan's master and minions against real Salt 3008.3's, in the same run.

    .venv/bin/python bench/jobs.py                       # full run (~6 min), updates bench/RESULTS.md
    .venv/bin/python bench/jobs.py --sizes 1,3 --rounds 1 --cli-runs 2 --min-seconds 2 --no-results

Two clusters run side by side on 127.0.0.1, each on its own free ports with its root_dir,
pki, cache and logs under bench/.work/jobs/ (saltpan's sock_dir in a short /tmp dir: ipc
paths are limited to 107 bytes): ``saltpan master`` + ``saltpan minion`` processes, and
``salt-master`` + ``salt-minion`` processes from the Salt venv (bench/salt_venv.py).  Both
masters auto-accept keys and keep their defaults otherwise (5 worker processes each;
Salt's minions run each job in a forked process, saltpan's in a thread: each one's default).
Minions are the first bench-fleet minions with their grains.

For each cluster size (1 minion, then 20: the 19 more are started into the same clusters),
in alternating rounds:

- in-process client: ``runtime.client.LocalClient(opts).cmd('*', 'test.ping')`` against
  ``salt.client.LocalClient(c_path=...).cmd('*', 'test.ping')``, one client object, jobs
  back to back (bench/jobs_client_helper.py): the median job latency, and jobs per second
  over the loop;
- CLI, whole process: ``saltpan run -c F '*' test.ping`` against ``salt -c D '*' test.ping``
  (both with ``--out json --static``).

Every job must bring back True from every minion.  Then, with all 20 minions idle for a
few seconds: each minion's memory (RSS and PSS from /proc/<pid>/smaps_rollup, summed over
its process tree; the median minion) and the master's (all its processes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plane  # noqa: E402
import salt_venv  # noqa: E402

SECTION = "Jobs through a master (bench/jobs.py)"
KINDS = ("saltpan", "salt")


def in_process(cluster: plane.Cluster, python: Path, expect: int, args: argparse.Namespace,
               out: Path) -> dict[str, Any]:
    argv = [str(python), str(common.BENCH_DIR / "jobs_client_helper.py"), "--kind", cluster.kind,
            "--conf", str(cluster.master_conf), "--expect", str(expect), "--min-jobs", str(args.min_jobs),
            "--min-seconds", str(args.min_seconds), "--out", str(out)]
    run = common.run_process(argv, timeout=900, capture_dir=out.parent)
    if run.returncode != 0:
        raise SystemExit(f"{cluster.kind} client helper failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
    data = json.loads(out.read_text(encoding="utf-8"))
    data["latency"] = common.median(data["latencies"])
    data["rate"] = data["jobs"] / data["seconds"]
    return data


def cli_runs(cluster: plane.Cluster, ids: list[str], runs: int) -> tuple[list[float], list[int], int]:
    times, rss, incomplete = [], [], 0
    for _ in range(runs):
        run, returns = cluster.ping("*", 30)
        times.append(run.seconds)
        rss.append(run.max_rss_kib)
        if run.returncode != 0 or any(returns.get(m) is not True for m in ids) or len(returns) != len(ids):
            incomplete += 1
    return times, rss, incomplete


def measure_size(clusters: dict[str, plane.Cluster], pythons: dict[str, Path], ids: list[str],
                 args: argparse.Namespace, scratch: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {k: {"latency": [], "rate": [], "cli": [], "cli_rss": [], "incomplete": 0,
                                          "jobs": 0} for k in KINDS}
    for kind in KINDS:  # one untimed CLI call each (page cache)
        clusters[kind].ping("*", 30)
    for index in range(args.rounds):
        order = KINDS if index % 2 == 0 else tuple(reversed(KINDS))
        for kind in order:
            data = in_process(clusters[kind], pythons[kind], len(ids), args,
                              scratch / f"{kind}-{len(ids)}-{index}.json")
            out[kind]["latency"].append(data["latency"])
            out[kind]["rate"].append(data["rate"])
            out[kind]["incomplete"] += data["incomplete"]
            out[kind]["jobs"] += data["jobs"]
            print(f"{len(ids):3} minion(s) round {index + 1}/{args.rounds} {kind:8} in-process: "
                  f"{data['jobs']} jobs, median latency {data['latency'] * 1000:.1f} ms, {data['rate']:.2f} jobs/s"
                  + (f", {data['incomplete']} incomplete" if data["incomplete"] else ""), flush=True)
        for kind in order:
            times, rss, bad = cli_runs(clusters[kind], ids, args.cli_runs)
            out[kind]["cli"] += times
            out[kind]["cli_rss"] += rss
            out[kind]["incomplete"] += bad
            print(f"{len(ids):3} minion(s) round {index + 1}/{args.rounds} {kind:8} CLI: "
                  + ", ".join(f"{t:.2f}" for t in times) + " s" + (f", {bad} incomplete" if bad else ""), flush=True)
    return out


def memory(clusters: dict[str, plane.Cluster]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind, cluster in clusters.items():
        minions = [plane.tree_memory(d.pid) for d in cluster.minions.values()]
        minions.sort(key=lambda m: m.rss_kib)
        assert cluster.master is not None
        out[kind] = {"minion": minions[len(minions) // 2], "minion_min": minions[0], "minion_max": minions[-1],
                     "master": plane.tree_memory(cluster.master.pid)}
    return out


def report(args: argparse.Namespace, sizes: list[int], results: dict[int, dict[str, dict[str, Any]]],
           mem: dict[str, dict[str, Any]], loads: dict[str, float]) -> str:
    date = common.today()
    med = common.median
    rows = []
    for size in sizes:
        sp, salt = results[size]["saltpan"], results[size]["salt"]
        rows.append([f"test.ping in-process latency, {size} minion(s) (ms)", f"{med(sp['latency']) * 1000:.1f}",
                     f"{med(salt['latency']) * 1000:.0f}", f"{med(salt['latency']) / med(sp['latency']):.0f}x less",
                     date])
    for size in sizes:
        sp, salt = results[size]["saltpan"], results[size]["salt"]
        rows.append([f"back-to-back test.ping jobs/s, {size} minion(s)", f"{med(sp['rate']):.1f}",
                     f"{med(salt['rate']):.2f}", f"{med(sp['rate']) / med(salt['rate']):.0f}x", date])
    for size in sizes:
        sp, salt = results[size]["saltpan"], results[size]["salt"]
        rows.append([f"CLI `saltpan run '*' test.ping` vs `salt '*' test.ping`, {size} minion(s), whole process (s)",
                     f"{med(sp['cli']):.3f}", f"{med(salt['cli']):.3f}",
                     f"{med(salt['cli']) / med(sp['cli']):.1f}x faster", date])
    sp_m, salt_m = mem["saltpan"], mem["salt"]
    rows.append(["idle minion memory (median of the minions; all its processes)",
                 f"{common.mib(sp_m['minion'].rss_kib)} RSS, {common.mib(sp_m['minion'].pss_kib)} PSS "
                 f"({sp_m['minion'].processes} process)",
                 f"{common.mib(salt_m['minion'].rss_kib)} RSS, {common.mib(salt_m['minion'].pss_kib)} PSS "
                 f"({salt_m['minion'].processes} processes)",
                 f"{sp_m['minion'].rss_kib / salt_m['minion'].rss_kib:.0%} of its RSS", date])
    rows.append(["master memory, all its processes, 5 workers, 20 minions",
                 f"{common.mib(sp_m['master'].rss_kib)} RSS, {common.mib(sp_m['master'].pss_kib)} PSS "
                 f"({sp_m['master'].processes} processes)",
                 f"{common.mib(salt_m['master'].rss_kib)} RSS, {common.mib(salt_m['master'].pss_kib)} PSS "
                 f"({salt_m['master'].processes} processes)",
                 f"{salt_m['master'].pss_kib / sp_m['master'].pss_kib:.1f}x less PSS", date])
    lines = [common.table(["workload", "saltpan", "Salt 3008.3", "ratio", "date"], rows), ""]
    big = max(sizes)
    sp, salt = results[big]["saltpan"], results[big]["salt"]
    rate_x = med(sp["rate"]) / med(salt["rate"])
    lat_x = med(salt["latency"]) / med(sp["latency"])
    mem_share = sp_m["minion"].rss_kib / salt_m["minion"].rss_kib
    lines.append(f"- Targets (issue 5), {big} minions: at least 20x Salt's jobs/s: **{'met' if rate_x >= 20 else 'missed'}** "
                 f"({rate_x:.0f}x); at most a twentieth of its in-process latency: "
                 f"**{'met' if lat_x >= 20 else 'missed'}** ({lat_x:.0f}x less); an idle minion under 30% of "
                 f"salt-minion's RSS: **{'met' if mem_share < 0.30 else 'missed'}** ({mem_share:.0%}).")
    small = min(sizes)
    cli_small = med(results[small]["saltpan"]["cli"])
    lines.append(f"- Targets (issue 20): in-process latency with {big} minions at most 10 ms: "
                 f"**{'met' if med(sp['latency']) <= 0.010 else 'missed'}** ({med(sp['latency']) * 1000:.1f} ms); "
                 f"at least 100x Salt's jobs/s: **{'met' if rate_x >= 100 else 'missed'}** ({rate_x:.0f}x); "
                 f"`saltpan run '*' test.ping` with {small} minion(s) at most 0.1 s, whole process: "
                 f"**{'met' if cli_small <= 0.1 else 'missed'}** ({cli_small:.3f} s).")
    lines.append(f"- Machine: {common.machine()}; load average (1 min) at start / end of the measurements: "
                 f"{loads['start']:.1f} / {loads['end']:.1f}.")
    lines.append(f"- In-process: {args.rounds} alternating rounds per size; a round is one client process running "
                 f"jobs back to back for at least {args.min_seconds:.0f} s and {args.min_jobs} jobs after one untimed "
                 "job; latency is the median job of the round, jobs/s the round's count over its time; the table "
                 "gives the median round. Jobs run: "
                 + ", ".join(f"{s} minion(s) saltpan {results[s]['saltpan']['jobs']}, Salt {results[s]['salt']['jobs']}"
                             for s in sizes) + ".")
    lines.append(f"- CLI: {args.cli_runs} runs per round each (median of all), after one untimed run; "
                 "`saltpan run -c F '*' test.ping --out json --static` against "
                 "`salt -c D '*' test.ping --out json --static`. Peak RSS of the CLI process: saltpan "
                 f"{common.mib(med(results[big]['saltpan']['cli_rss']))}, Salt {common.mib(med(results[big]['salt']['cli_rss']))}.")
    incomplete = {f"{k} {s}": results[s][k]["incomplete"] for s in sizes for k in KINDS if results[s][k]["incomplete"]}
    lines.append("- Every job brought back True from every minion." if not incomplete else
                 "- **Incomplete jobs** (a minion missing or not True): "
                 + ", ".join(f"{k}: {v}" for k, v in incomplete.items()) + ".")
    lines.append("- Memory: read after the last job with the minions idle for "
                 f"{args.idle:.0f} s; a minion's figure is the sum over its process tree (salt-minion runs a "
                 "parent and a child process), the median of the 20 (saltpan "
                 f"{common.mib(sp_m['minion_min'].rss_kib)}-{common.mib(sp_m['minion_max'].rss_kib)} RSS, Salt "
                 f"{common.mib(salt_m['minion_min'].rss_kib)}-{common.mib(salt_m['minion_max'].rss_kib)}). RSS counts "
                 "pages shared between a daemon's processes once per process; PSS shares them out.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    parser.add_argument("--sizes", default="1,20", help="cluster sizes, ascending (default 1,20)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per size (default 3)")
    parser.add_argument("--min-jobs", type=int, default=10, help="in-process jobs per round, at least (default 10)")
    parser.add_argument("--min-seconds", type=float, default=8.0,
                        help="in-process seconds per round, at least (default 8)")
    parser.add_argument("--cli-runs", type=int, default=5, help="CLI runs per round (default 5)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before memory is read (default 5)")
    common.add_load_args(parser)
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.fresh_scratch("jobs")
    pythons = {"saltpan": Path(sys.executable), "salt": salt_venv.salt_python()}
    minions = plane.fleet_minions(fleet, scratch, max(sizes))
    common.wait_quiet(args.wait_load)
    clusters = {kind: plane.Cluster(kind, scratch / kind, fleet) for kind in KINDS}
    results: dict[int, dict[str, dict[str, Any]]] = {}
    loads = {"start": os.getloadavg()[0]}
    try:
        for kind in KINDS:
            clusters[kind].start_master()
        started = 0
        for size in sizes:
            for kind in KINDS:
                for minion_id, grains in minions[started:size]:
                    clusters[kind].start_minion(minion_id, grains)
            started = size
            ids = [m for m, _ in minions[:size]]
            for kind in KINDS:
                took = clusters[kind].wait_answering(ids, timeout=120 + 10 * size)
                print(f"{kind}: {size} minion(s) answering after {took:.1f} s", flush=True)
            results[size] = measure_size(clusters, pythons, ids, args, scratch)
        time.sleep(args.idle)
        mem = memory(clusters)
        loads["end"] = os.getloadavg()[0]
        for kind in KINDS:
            print(f"{kind}: idle minion {mem[kind]['minion'].text()}; master {mem[kind]['master'].text()}")
    finally:
        for cluster in clusters.values():
            cluster.stop()
    left = plane.leftovers(set().union(*(c.pgids() for c in clusters.values())))
    text = report(args, sizes, results, mem, loads)
    common.publish(SECTION, text, not args.no_results, left)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
