"""Remote highstate through the master: saltpan vs real Salt, N = 1 and 20 minions.

For each fleet size both systems run side by side (saltpan master + N ``saltpan minion``
processes, Salt master + N ``salt-minion`` processes, on their own free loopback ports) on
the bench fleet (../shared/bench-fleet; ``__SANDBOX__`` becomes a scratch dir per minion).
Each round, for each system in alternating order: empty the sandboxes and the minions' file
caches, time ``state.apply`` on all minions through the master's CLI (first run: every state
makes its change, files fetched from the master), then again at once (second run: nothing to
change, files checked by hash).  Wall time of the CLI command, start-up included.  Medians
over the rounds go to bench/RESULTS.md.

    python bench/remote_highstate.py                    # N = 1 and 20, 3 rounds
    python bench/remote_highstate.py --sizes 5 --rounds 5
    python bench/remote_highstate.py --only saltpan     # no Salt (no ratio, nothing written)

Real Salt comes from a separate venv: --salt-venv, else bench/salt_venv.py's
($SALTPAN_BENCH_SALT_VENV, or bench/.work/saltvenv created with pip when missing); it needs
salt-master, salt-minion and salt in its bin/.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import salt_venv  # noqa: E402
from daemon_fleet import Cluster, SaltCluster, SaltpanCluster, StateRun, load_average, pick_minions  # noqa: E402

TITLE = "Remote highstate through the master (state.apply, N minions)"


def salt_bin(venv: str | None) -> Path:
    """bin/ of the Salt venv: --salt-venv, else bench/salt_venv.py's (SALTPAN_BENCH_SALT_VENV or
    bench/.work/saltvenv, created with pip when missing)."""
    path = (Path(venv) if venv else salt_venv.ensure()) / "bin"
    for tool in ("salt-master", "salt-minion", "salt"):
        if not (path / tool).exists():
            raise SystemExit(f"no {tool} in {path}: pass --salt-venv (a venv with salt {salt_venv.SALT_VERSION})")
    return path


def one_round(cluster: Cluster, log: list[str]) -> tuple[StateRun, StateRun]:
    cluster.reset()
    first = cluster.apply()
    second = cluster.apply()
    for label, run in (("first", first), ("second", second)):
        line = (f"  {cluster.name:8} N={len(cluster.ids):<3} {label:6} {run.seconds:7.2f} s  "
                f"{run.minions} minions, {run.states} states, {run.changed} changed, {run.failed} failed")
        print(line, flush=True)
        log.append(line)
        if run.problems or run.minions != len(cluster.ids):
            raise SystemExit(f"{cluster.name} {label} run is not a clean highstate:\n" + "\n".join(run.problems[:20])
                             + "\n" + cluster.logs()[-4000:])
    return first, second


def bench_size(size: int, rounds: int, fleet: common.Fleet, scratch: Path, bin_dir: Path | None,
               log: list[str]) -> dict[str, dict[str, list[float]]]:
    ids = pick_minions(fleet, size)
    clusters: list[Cluster] = [SaltpanCluster(scratch / f"saltpan-{size}", fleet, ids)]
    if bin_dir is not None:
        clusters.append(SaltCluster(scratch / f"salt-{size}", fleet, ids, bin_dir))
    times: dict[str, dict[str, list[float]]] = {c.name: {"first": [], "second": []} for c in clusters}
    states: dict[str, int] = {}
    try:
        for cluster in clusters:
            started = time.perf_counter()
            cluster.start()
            print(f"{cluster.name}: master + {size} minions up in {time.perf_counter() - started:.1f} s", flush=True)
        for index in range(rounds):
            order = clusters if index % 2 == 0 else list(reversed(clusters))
            for cluster in order:
                first, second = one_round(cluster, log)
                times[cluster.name]["first"].append(first.seconds)
                times[cluster.name]["second"].append(second.seconds)
                states[cluster.name] = first.states
    finally:
        for cluster in clusters:
            cluster.stop()
    if len(set(states.values())) > 1:
        raise SystemExit(f"the two systems ran a different number of states: {states}")
    return times


def report(results: dict[int, dict[str, dict[str, list[float]]]], rounds: int, ids_note: str,
           log: list[str], load_before: str) -> str:
    rows = ["| minions | run | saltpan (median) | Salt (median) | Salt / saltpan |", "| --- | --- | --- | --- | --- |"]
    ratios: list[float] = []
    for size, by_system in results.items():
        for run in ("first", "second"):
            ours = statistics.median(by_system["saltpan"][run])
            theirs = statistics.median(by_system["Salt"][run])
            rows.append(f"| {size} | {run} | {ours:.2f} s | {theirs:.2f} s | **{theirs / ours:.1f}x** |")
            ratios.append(theirs / ours)
    lowest = min(ratios)
    rows += ["", f"- Target (issue 6): at least 5x Salt: **{'met' if lowest >= 5 else 'missed'}** "
                 f"(lowest ratio {lowest:.1f}x)."]
    return "\n".join([
        f"`python bench/remote_highstate.py` on {common.today()}, {common.machine()}; load average before the run "
        f"{load_before} (1/5/15 min; the machine is shared with other work), {rounds} rounds, "
        "the two systems alternating within each round.",
        "",
        "Each system: one master and N minion processes on loopback, minions from the bench fleet "
        f"({ids_note}). A round empties the sandboxes and the minions' file caches, then times "
        "`state.apply` on `*` through the master's CLI (`saltpan run '*' state.apply --out json --static` / "
        "`salt '*' state.apply --out=json --static`), wall time of the whole command: first run (every "
        "state changes something, files fetched from the master) and second run right after (nothing "
        "changes). Every run is checked: all minions returned, no state failed, both systems ran the "
        "same number of states. Real Salt 3008.3 from a separate venv with its defaults (5 master "
        "workers, a forked process per job on the minion); saltpan with its defaults (5 workers, jobs "
        "in threads of the minion process).",
        "",
        *rows,
        "",
        "Rounds (seconds):",
        "",
        "```",
        *log,
        "```",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,20", help="comma-separated fleet sizes (default 1,20)")
    parser.add_argument("--rounds", type=int, default=3)
    common.add_fleet_args(parser)
    parser.add_argument("--salt-venv", default=None)
    parser.add_argument("--only", choices=["saltpan"], help="measure saltpan alone (nothing is written)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)
    fleet = common.locate_fleet(args.fleet_dir)
    bin_dir = None if args.only else salt_bin(args.salt_venv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    # Unix socket paths are limited to ~107 bytes: keep the scratch dir short.
    scratch = Path(tempfile.mkdtemp(prefix="rh-", dir="/tmp"))
    load_before = load_average()
    log: list[str] = []
    results: dict[int, dict[str, dict[str, list[float]]]] = {}
    try:
        for size in sizes:
            print(f"== N={size}", flush=True)
            results[size] = bench_size(size, args.rounds, fleet, scratch, bin_dir, log)
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if bin_dir is None:
        return 0
    ids_note = ", ".join(f"N={s}: {', '.join(pick_minions(fleet, s)[:3])}{' ...' if s > 3 else ''}" for s in sizes)
    body = report(results, args.rounds, ids_note, log, load_before)
    common.update_results(TITLE, body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
