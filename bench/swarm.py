"""Auth storm and one test.ping to a whole swarm: saltpan against real Salt 3008.3, in the same run.

    .venv/bin/python bench/swarm.py                  # full run (~10 min), updates bench/RESULTS.md
    .venv/bin/python bench/swarm.py --count 100 --salt-max 5 --pings 1 --no-results

saltpan: a ``saltpan master`` (auto_accept, defaults otherwise: 5 workers) and
``saltpan swarm --count N``: N minions in one process, each with its own new key pair,
session, heartbeat and subscription.  Salt: a ``salt-master`` (auto_accept, 5 workers) and
as many ``salt-minion`` processes as this machine reasonably holds: the script first starts
one salt-minion, measures its memory (PSS summed over its processes) and start-up CPU, and
runs ``min(--salt-max, half the available memory / that PSS)`` of them; saltpan's swarm is
run at that same count too, and at ``--count`` (1,000).  Every cluster starts from nothing
(new keys, empty caches), on free loopback ports, under bench/.work/swarm/; both masters serve
the bench fleet's trees (each minion's pillar is compiled when its session comes up).

Timings, from the moment the minions are started:

- **auth storm**: until every minion has fired ``salt/minion/<id>/start`` on the master's
  event bus, which a minion of either implementation does once its first session is up
  (key accepted, authenticated, pillar fetched); the time at which the last key was
  accepted (``salt/auth``) is reported beside it (bench/swarm_events_helper.py watches);
- **ping**: then ``saltpan run '*' test.ping`` / ``salt '*' test.ping`` (whole process, 60 s
  timeout), until every minion has answered True; ``--pings`` times, the first and the median.

Memory after the pings: the master (all its processes) and the minions (the swarm process;
the salt-minion processes summed), RSS and PSS from /proc/<pid>/smaps_rollup.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plane  # noqa: E402
import salt_venv  # noqa: E402

SECTION = "Auth storm and swarm (bench/swarm.py)"
SCALE_SECTION = "10,000 minions on one master (bench/swarm.py --saltpan-only)"
PREFIX = "swarm-"


def mem_available_kib() -> int:
    with open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            continue
    return total / ticks


def probe_salt_minion(fleet: common.Fleet, scratch: Path) -> dict[str, Any]:
    """One salt-minion on its own master: its memory and the CPU it took to start."""
    cluster = plane.Cluster("salt", scratch / "probe", fleet)
    try:
        cluster.start_master()
        start = time.monotonic()
        daemon = cluster.start_minion(f"{PREFIX}probe", {})
        cluster.wait_answering([f"{PREFIX}probe"], timeout=180)
        took = time.monotonic() - start
        cpu = cpu_seconds(plane.process_tree(daemon.pid))
        time.sleep(3)
        memory = plane.tree_memory(daemon.pid)
    finally:
        cluster.stop()
    return {"memory": memory, "cpu": cpu, "answering_after": took}


def watch_events(cluster: plane.Cluster, python: Path, count: int, out: Path, timeout: float) -> subprocess.Popen:
    argv = [str(python), str(common.BENCH_DIR / "swarm_events_helper.py"), "--kind", cluster.kind,
            "--conf", str(cluster.master_conf), "--count", str(count), "--timeout", str(timeout), "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=common.bench_env(),
                            cwd=str(common.REPO_DIR))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise SystemExit(f"the {cluster.kind} event watcher did not start: {line}{proc.stderr.read()[-2000:]}")
    return proc


def storm(kind: str, count: int, fleet: common.Fleet, scratch: Path, python: Path,
          args: argparse.Namespace) -> dict[str, Any]:
    """Start a master and count minions from nothing; time the storm and the pings."""
    base = scratch / f"{kind}-{count}"
    cluster = plane.Cluster(kind, base, fleet)
    ids = [f"{PREFIX}{i:04d}" for i in range(count)]
    events_out = base / "events.json"
    result: dict[str, Any] = {"kind": kind, "count": count}
    try:
        cluster.start_master()
        watcher = watch_events(cluster, python, count, events_out, args.storm_timeout)
        assert cluster.master is not None
        result["master_memory_empty"] = plane.tree_memory(cluster.master.pid)
        load_before = os.getloadavg()[0]
        t0 = time.monotonic()
        if kind == "saltpan":
            conf = cluster.minion_conf("swarm", {})
            swarm = cluster.start_other("swarm", [cluster.saltpan_bin(), "swarm", "-c", str(conf), "--count",
                                                  str(count), "--prefix", PREFIX])
        else:
            for minion_id in ids:
                cluster.start_minion(minion_id, {})
        spawned = time.monotonic() - t0
        if args.saltpan_only:
            # the acceptance: every minion answers test.ping, timed from launch.  The first ping goes
            # once every minion has fired its start event (the watcher exits then), then pings back
            # to back until one brings True from all: a ping waits its whole --timeout (20 s) when a
            # minion is missing, so pings from launch measured the storm plus 0-20 s of ping phase
            try:
                watcher.wait(max(1.0, args.storm_timeout - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                pass
            result["answering"] = until_all_answer(cluster, ids, t0, args.storm_timeout)
            print(f"{kind} {count}: all answering test.ping "
                  + (f"{result['answering']:.1f} s after launch" if result["answering"] is not None
                     else f"not within {args.storm_timeout:.0f} s"), flush=True)
            try:
                watcher.wait(5)
            except subprocess.TimeoutExpired:
                watcher.terminate()
                watcher.wait(10)
        try:
            watcher.wait(args.storm_timeout + 30)
        except subprocess.TimeoutExpired:
            watcher.kill()
        events = json.loads(events_out.read_text(encoding="utf-8")) if events_out.exists() else {"auth": {}, "start": {}}
        started = [events["start"][m] for m in ids if m in events["start"]]
        accepted = [events["auth"][m] for m in ids if m in events["auth"]]
        result.update(spawned=spawned, started=len(started), accepted=len(accepted), load_before=load_before,
                      storm=(max(started) - t0) if len(started) == count else None,
                      keys=(max(accepted) - t0) if len(accepted) == count else None,
                      half=(sorted(started)[count // 2] - t0) if len(started) > count // 2 else None)
        print(f"{kind} {count}: {len(started)} minions started"
              + (f", all within {result['storm']:.1f} s (keys accepted within {result['keys']:.1f} s)"
                 if result["storm"] is not None else f" within {args.storm_timeout:.0f} s (incomplete)"), flush=True)
        assert cluster.master is not None
        master_pids = plane.process_tree(cluster.master.pid)
        result["storm_cpu"] = cpu_seconds(master_pids)
        pings: list[float] = []
        answered: list[int] = []
        ping_cpu: list[float] = []
        for _ in range(args.pings):
            before = cpu_seconds(master_pids)
            run, returns = cluster.ping("*", 60)
            ping_cpu.append(cpu_seconds(master_pids) - before)
            pings.append(run.seconds)
            answered.append(sum(1 for m in ids if returns.get(m) is True))
            print(f"{kind} {count}: test.ping {run.seconds:.2f} s, {answered[-1]} of {count} answered True "
                  f"(master CPU {ping_cpu[-1]:.2f} s; load {os.getloadavg()[0]:.1f})", flush=True)
        result.update(pings=pings, answered=answered, ping_cpu=ping_cpu)
        before, t_idle = cpu_seconds(master_pids), time.monotonic()
        time.sleep(args.idle)
        result["idle_cpu"] = (cpu_seconds(master_pids) - before) / (time.monotonic() - t_idle)
        print(f"{kind} {count}: idle master (heartbeats, presence) {result['idle_cpu']:.1%} of a core", flush=True)
        result["master_memory"] = plane.tree_memory(cluster.master.pid)
        if kind == "saltpan":
            result["minion_memory"] = plane.tree_memory(swarm.pid)
        else:
            parts = [plane.tree_memory(d.pid) for d in cluster.minions.values()]
            result["minion_memory"] = plane.Memory(sum(p.processes for p in parts), sum(p.rss_kib for p in parts),
                                                   sum(p.pss_kib for p in parts))
        result["load_after"] = os.getloadavg()[0]
        print(f"{kind} {count}: master {result['master_memory'].text()}; minions {result['minion_memory'].text()}",
              flush=True)
    finally:
        cluster.stop()
        result["left"] = plane.leftovers(cluster.pgids())
    return result


def until_all_answer(cluster: plane.Cluster, ids: list[str], t0: float, timeout: float) -> float | None:
    """Seconds from t0 until one `saltpan run '*' test.ping` brings True from every id (None: not in time)."""
    wanted = set(ids)
    while time.monotonic() - t0 < timeout:
        _, returns = cluster.ping("*", 20)
        if wanted <= {m for m, v in returns.items() if v is True}:
            return time.monotonic() - t0
        time.sleep(1)
    return None


def fmt_s(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "incomplete"


def report(args: argparse.Namespace, probe: dict[str, Any], salt_count: int, why: str,
           runs: list[dict[str, Any]]) -> str:
    date = common.today()
    rows = []
    for run in runs:
        label = ("`saltpan swarm`" if run["kind"] == "saltpan" else "salt-minion processes") + f", {run['count']:,}"
        first = run["pings"][0] if run["pings"] else None
        all_answered = all(a == run["count"] for a in run["answered"]) and run["pings"]
        total = run["storm"] + first if run["storm"] is not None and first is not None and all_answered else None
        rows.append([f"{'saltpan' if run['kind'] == 'saltpan' else 'Salt 3008.3'}: {label} minions",
                     f"{fmt_s(run['storm'])} (keys {fmt_s(run['keys'])})",
                     f"{first:.2f} / {common.median(run['pings']):.2f}" if run["pings"] else "-",
                     f"{min(run['answered'] or [0]):,}", fmt_s(total),
                     f"{common.mib(run['master_memory'].rss_kib)} / {common.mib(run['master_memory'].pss_kib)} "
                     f"({run['master_memory'].processes})",
                     f"{common.mib(run['minion_memory'].rss_kib)} / {common.mib(run['minion_memory'].pss_kib)} "
                     f"({run['minion_memory'].processes})",
                     f"{run['load_before']:.1f}", date])
    lines = [common.table(["run", "auth storm: all sessions up (s)", "test.ping to all, first / median (s)",
                           "answered", "storm + first ping (s)", "master RSS / PSS (processes)",
                           "minions RSS / PSS (processes)", "load before", "date"], rows), ""]
    big = [r for r in runs if r["kind"] == "saltpan" and r["count"] == args.count]
    if big:
        b = big[0]
        ok = b["storm"] is not None and b["pings"] and b["answered"][0] == b["count"]
        total = b["storm"] + b["pings"][0] if ok else None
        lines.append(f"- Target (issue 7): {args.count:,} minions authenticated and answering within 60 s: "
                     f"**{'met' if total is not None and total <= 60 else 'missed'}**"
                     + (f" ({total:.1f} s: storm {b['storm']:.1f} s + first ping {b['pings'][0]:.1f} s)." if total
                        else "."))
    lines.append(f"- Machine: {common.machine()}; `load before` is the 1-minute load average when the minions "
                 "were started.")
    lines.append(f"- Salt's count: one salt-minion took {probe['memory'].text()} and {probe['cpu']:.1f} s of CPU to "
                 f"start (answering after {probe['answering_after']:.1f} s); {why} Both run at that count; saltpan "
                 f"also at {args.count:,}.")
    lines.append("- Auth storm: from starting the minions (one `saltpan swarm` process, or one `salt-minion` process "
                 "each, all spawned at once) until every one has fired `salt/minion/<id>/start` on the master's event "
                 "bus (first session up: new key auto-accepted, authenticated, pillar compiled by the master from the "
                 "bench fleet's tree and fetched); `keys` is when the last `salt/auth` accept was seen. Every cluster "
                 "starts from nothing: new keys (Salt minions generate RSA-2048 pairs, saltpan Ed25519/X25519), empty "
                 "caches. Both masters: auto_accept, 5 worker processes (the default).")
    lines.append(f"- Ping: `saltpan run -c F '*' test.ping --timeout 60` / `salt -c D '*' test.ping -t 60` (both "
                 f"`--out json --static`), whole process, {args.pings} times each after the storm; `answered` is the "
                 "fewest minions that answered True in one of them.")
    lines.append("- Memory after the pings: RSS summed over processes counts shared pages once per process; PSS "
                 "shares them out (the master's 5 workers are forks of one process).")
    left = [line for r in runs for line in r["left"]]
    if left:
        lines.append(f"- **{len(left)} process(es) were still running after stop** (killed by hand).")
    return "\n".join(lines)


def saltpan_report(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    """The scale table: per swarm size, launch to all answering, the pings, the master's CPU and memory."""
    date = common.today()
    rows = []
    for run in runs:
        count, mem, empty = run["count"], run["master_memory"], run["master_memory_empty"]
        per_k = (mem.pss_kib - empty.pss_kib) / count * 1000
        rows.append([f"{count:,}", fmt_s(run.get("answering")),
                     f"{run['pings'][0]:.2f} / {common.median(run['pings']):.2f}" if run["pings"] else "-",
                     f"{min(run['answered'] or [0]):,}",
                     f"{run['storm_cpu']:.0f} s", f"{common.median(run['ping_cpu']):.2f} s" if run["ping_cpu"] else "-",
                     f"{run['idle_cpu']:.0%}",
                     f"{common.mib(empty.pss_kib)} -> {common.mib(mem.pss_kib)} PSS, {common.mib(mem.rss_kib)} RSS "
                     f"({mem.processes})", common.mib(per_k),
                     f"{common.mib(run['minion_memory'].rss_kib)} ({run['minion_memory'].processes})",
                     f"{run['load_before']:.1f} / {run['load_after']:.1f}", date])
    lines = [common.table(["minions", "launch to all answering test.ping (s)", "test.ping to all, first / median (s)",
                           "answered (fewest)", "master CPU until then", "master CPU per ping",
                           "master idle CPU (of a core)", "master memory, empty -> with the swarm",
                           "master PSS per 1,000 sessions", "swarm RSS (processes)", "load before / after",
                           "date"], rows), ""]
    big = [r for r in runs if r["count"] == args.count][0]
    up = big.get("answering")
    pings_ok = bool(big["pings"]) and all(a == big["count"] for a in big["answered"])
    lines.append(f"- Target (issue 20): {args.count:,} swarm minions authenticated and answering `test.ping` within "
                 f"60 s of launch: **{'met' if up is not None and up <= 60 else 'missed'}** ({fmt_s(up)} s); "
                 f"`test.ping` to all returns in under 5 s: "
                 f"**{'met' if pings_ok and common.median(big['pings']) < 5 else 'missed'}**"
                 + (f" (median {common.median(big['pings']):.2f} s of {len(big['pings'])})." if big["pings"] else "."))
    lines.append(f"- Machine: {common.machine()}; the 1-minute load average at launch and after the pings is beside "
                 "each row. The machine is shared: other developers' test suites ran at the same time, and the swarm "
                 "(Python processes holding every minion) shares the 2 cores with the master.")
    lines.append("- Launch to all answering: from starting `saltpan swarm --count N` (new keys, auto-accepted, each "
                 "session's pillar compiled by the master from the bench fleet's tree) until one `saltpan run '*' "
                 "test.ping` brings True from all N; the first ping is sent once every minion has fired its "
                 "`salt/minion/<id>/start` event, then pings run back to back (each `--timeout 20`: before this, "
                 "pings ran back to back from launch, and the figure took 0-20 s of ping phase after the storm). Then "
                 f"{args.pings} more pings, `--timeout 60 --out json --static`, whole process. Master CPU: user + "
                 "system of all its processes (5 workers, the default) from /proc; idle CPU over "
                 f"{args.idle:.0f} s after the pings (heartbeats and presence only). Memory per 1,000 sessions: the "
                 "master's PSS (all processes) with the swarm up, less its PSS before the launch, per 1,000 minions.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    common.add_load_args(parser)
    parser.add_argument("--count", type=int, default=1000, help="saltpan swarm size (default 1000)")
    parser.add_argument("--salt-max", type=int, default=150,
                        help="at most this many salt-minion processes (default 150; see the docstring)")
    parser.add_argument("--pings", type=int, default=3, help="test.ping runs after each storm (default 3)")
    parser.add_argument("--storm-timeout", type=float, default=600, help="seconds to wait for a storm (default 600)")
    parser.add_argument("--idle", type=float, default=10.0,
                        help="seconds the master's idle CPU (heartbeats) is measured after the pings (default 10)")
    parser.add_argument("--saltpan-only", action="store_true",
                        help="only saltpan swarms, at --count (and --also counts); no Salt probe or storm")
    parser.add_argument("--also", default="", help="more saltpan swarm sizes, comma-separated (with --saltpan-only)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="profile the master's processes with cProfile: one .prof per process in this directory")
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    args = parser.parse_args(argv)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        os.environ["SALTPAN_PROFILE_DIR"] = str(args.profile.resolve())   # read by runtime/profiling.py

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.fresh_scratch("swarm")
    pythons = {"saltpan": Path(sys.executable)}
    common.wait_quiet(args.wait_load)
    if args.saltpan_only:
        counts = sorted({args.count, *(int(c) for c in args.also.split(",") if c.strip())})
        runs = []
        for count in counts:
            common.wait_load_below(args.wait_load)
            runs.append(storm("saltpan", count, fleet, scratch, pythons["saltpan"], args))
        text = saltpan_report(args, runs)
        left = [line for r in runs for line in r["left"]]
        common.publish(SCALE_SECTION, text, not args.no_results, left)
        return 1 if left else 0

    pythons["salt"] = salt_venv.salt_python()
    probe = probe_salt_minion(fleet, scratch)
    available = mem_available_kib()
    by_memory = int(available / 2 / max(1, probe["memory"].pss_kib))
    salt_count = max(1, min(args.salt_max, by_memory))
    why = (f"half of the memory available at the start ({common.mib(available)}) holds {by_memory} of them, and "
           f"the run uses {salt_count}" + (f" (the --salt-max cap, {args.salt_max}: the machine is shared and "
                                           "has 2 cores, and a bigger storm measures mostly the scheduler)."
                                           if salt_count < by_memory else "."))
    print(f"salt-minion probe: {probe['memory'].text()}, {probe['cpu']:.1f} s CPU to start; {why}", flush=True)

    runs = []
    for kind, count in (("saltpan", salt_count), ("salt", salt_count), ("saltpan", args.count)):
        if kind == "saltpan" and count == args.count and runs and runs[0]["count"] == count:
            continue
        load, waited = common.wait_load_below(args.wait_load)
        runs.append(storm(kind, count, fleet, scratch, pythons[kind], args))
    text = report(args, probe, salt_count, why, runs)
    left = [line for r in runs for line in r["left"]]
    common.publish(SECTION, text, not args.no_results, left)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
