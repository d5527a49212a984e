"""Back after a master restart: master SIGKILL, restart, seconds until every minion answers test.ping.

    .venv/bin/python bench/restart.py                       # 20 minions x 5 rounds, 1,000-minion swarm, Salt
    .venv/bin/python bench/restart.py --rounds 2 --swarm 0 --salt-rounds 0 --no-results   # quick look

Each system: one master and N minion processes on 127.0.0.1 (the first N bench-fleet minions),
every setting at its default (saltpan: 5 workers, heartbeat 5 s, recon_default 1 s, recon_max 10 s;
Salt 3008.3 from its venv, likewise), keys auto-accepted.  A round: every minion answers, the
master's whole process group gets SIGKILL, the same master is started again, and the clock runs
from that restart command.  Meanwhile a CLI ``test.ping`` to ``*`` is launched every
``--ping-every`` seconds (each with a 2 s timeout, at most 3 at once; for the swarm a 4 s
timeout, one at a time, no ``saltutil.find_job`` after it); the figure is the end of
the first ping that got every minion's True.  "ports open" is when the new master's ret and
publish ports first accept a connection (its own start-up, which the minions cannot speed up).

The swarm: ``saltpan swarm --count N`` (N minions in one process, each with its own key, session
and subscription) on its own master, the same rounds.  Figures go to RESULTS.md beside Salt's
measured in the same run (``--salt-rounds 0``: Salt's figure from ../shared/bench-fleet instead,
labelled so).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plane  # noqa: E402

SECTION = "Master restart (bench/restart.py)"
# (timeout of each ping in s, pings at once, gather-job-timeout in s): with the swarm one ping at a
# time and no saltutil.find_job after it: three overlapping pings to 1,000 minions, each followed by
# find_job to the missing ones, are 3,000-6,000 jobs a second of the bench's own making for one
# swarm process (one core) and the restarted master, whose backlog then makes every later ping late
PINGS = (2, 3, 1)
SWARM_PINGS = (4, 1, 0)
BENCH_FLEET_SALT_20 = 14.2      # ../shared/bench-fleet/README.md: "master restart until all 20 answer again"


def ping_argv(cluster: plane.Cluster, timeout: int, gather: int = 1) -> list[str]:
    if cluster.kind == "salt":
        return [cluster.salt_bin("salt"), "-c", str(cluster.master_conf.parent), "*", "test.ping", "--out", "json",
                "--static", "-t", str(timeout)]
    return [cluster.saltpan_bin(), "run", "-c", str(cluster.master_conf), "*", "test.ping", "--out", "json",
            "--static", "--timeout", str(timeout), "--gather-job-timeout", str(gather)]


def kill_master(cluster: plane.Cluster) -> None:
    assert cluster.master is not None and cluster.master.proc is not None
    try:
        os.killpg(cluster.master.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    cluster.master.proc.wait(10)
    common.wait_for(lambda: not common.port_open(cluster.ret_port), 10, interval=0.05, what="master ports closed")


def reauthenticated(cluster: plane.Cluster, ids: list[str], since: float) -> float | None:
    """Seconds from ``since`` (wall clock) to the last of ``ids`` accepted by the master, from its
    info-level log lines (``auth from 'ID' ... accepted``); None when the log does not tell."""
    if cluster.kind != "saltpan":
        return None
    last: dict[str, float] = {}
    try:
        text = (cluster.base / "m" / "master.log").read_text(errors="replace")
    except OSError:
        return None
    for found in re.finditer(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*auth from '([^']+)' key \S+ accepted",
                             text, re.M):
        stamp = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if stamp >= since:
            last[found.group(2)] = stamp
    if not all(m in last for m in ids):
        return None
    return max(last[m] for m in ids) - since


def restart_round(cluster: plane.Cluster, ids: list[str], ping_every: float, limit: float,
                  ping_timeout: int, max_pings: int, gather: int) -> dict[str, float]:
    """SIGKILL the master, start it again; seconds (from the restart) until the ports open and
    until a ping got all ``ids``."""
    kill_master(cluster)
    time.sleep(0.5)
    start = time.monotonic()
    wall = time.time()
    cluster.master = plane.Daemon(f"{cluster.kind}-master", cluster.master_argv(), cluster.base / "master.out")
    cluster.master.start()
    ports = None
    pings: list[tuple[float, subprocess.Popen]] = []
    next_ping = start
    try:
        while time.monotonic() - start < limit:
            now = time.monotonic()
            if ports is None and common.port_open(cluster.ret_port) and common.port_open(cluster.publish_port):
                ports = now - start
            if ports is not None and now >= next_ping and sum(p.poll() is None for _, p in pings) < max_pings:
                pings.append((now, subprocess.Popen(ping_argv(cluster, ping_timeout, gather), stdout=subprocess.PIPE,
                                                    stderr=subprocess.DEVNULL, text=True, env=common.bench_env())))
                next_ping = now + ping_every
            for launched, proc in pings:
                if proc.poll() is None or proc.stdout is None or proc.stdout.closed:
                    continue
                returns = plane.parse_returns(proc.stdout.read())
                proc.stdout.close()
                if all(returns.get(m) is True for m in ids):
                    done = time.monotonic() - start
                    time.sleep(0.5)   # the log lines of the last authentications reach the file
                    auth = reauthenticated(cluster, ids, wall)
                    return {"ports": ports or 0.0, "all": done, "ping_sent": launched - start,
                            "auth": -1.0 if auth is None else auth}
            time.sleep(0.02)
        print(f"  {cluster.kind}: not every minion answered within {limit} s of the restart", flush=True)
        auth = reauthenticated(cluster, ids, wall)
        return {"ports": ports or 0.0, "all": float("inf"), "ping_sent": -1.0, "auth": -1.0 if auth is None else auth}
    finally:
        for _, proc in pings:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def measure(kind: str, scratch: Path, fleet: common.Fleet, count: int, rounds: int, args: Any,
            swarm: bool = False) -> tuple[list[dict[str, float]], plane.Cluster]:
    cluster = plane.Cluster(kind, scratch / (f"{kind}-swarm" if swarm else kind), fleet,
                            master_extra={"log_level": args.log_level})
    try:
        cluster.start_master()
        if swarm:
            prefix = "sw-"
            conf = cluster.minion_conf("swarm", {}, {"log_level": "warning"})  # 1,000 minions logging at info slow it
            cluster.start_other("swarm", [cluster.saltpan_bin(), "swarm", "-c", str(conf), "--count", str(count),
                                          "--prefix", prefix])
            ids = [f"{prefix}{index:04d}" for index in range(count)]
        else:
            minions = plane.fleet_minions(fleet, scratch / kind, count)
            for minion_id, grains in minions:
                cluster.start_minion(minion_id, grains, {"log_level": args.log_level})
            ids = [m for m, _ in minions]
        took = cluster.wait_answering(ids, timeout=300 + count * (0.3 if swarm else 10), ping_timeout=10)
        print(f"{kind}{' swarm' if swarm else ''}: {count} minions answering after {took:.1f} s", flush=True)
        out = []
        for index in range(rounds):
            time.sleep(args.settle)
            got = restart_round(cluster, ids, args.ping_every, args.limit, *(SWARM_PINGS if swarm else PINGS))
            out.append(got)
            print(f"  round {index + 1}: ports open {got['ports']:.2f} s, all re-authenticated {got['auth']:.2f} s, "
                  f"all {count} answered {got['all']:.2f} s "
                  f"(ping sent at {got['ping_sent']:.2f} s), load {os.getloadavg()[0]:.1f}", flush=True)
        return out, cluster
    finally:
        cluster.stop()


def seconds(value: float, limit: float) -> str:
    return f"{value:.2f}" if value != float("inf") else f"over {limit:g}"


def line(label: str, rounds: list[dict[str, float]], limit: float) -> list[str]:
    auths = [r["auth"] for r in rounds if r.get("auth", -1) >= 0]
    return [label, f"{seconds(common.median([r['all'] for r in rounds]), limit)} s",
            f"{common.median([r['ports'] for r in rounds]):.2f} s",
            f"{common.median(auths):.2f} s" if auths else "-",
            ", ".join(seconds(r["all"], limit) for r in rounds)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_fleet_args(parser)
    parser.add_argument("--size", type=int, default=20, help="minion processes (default 20)")
    parser.add_argument("--rounds", type=int, default=5, help="restarts of the saltpan master (default 5)")
    parser.add_argument("--swarm", type=int, default=1000, help="swarm minions (default 1000; 0 to skip)")
    parser.add_argument("--swarm-rounds", type=int, default=3, help="restarts with the swarm (default 3)")
    parser.add_argument("--salt-rounds", type=int, default=2,
                        help="restarts of the Salt master (default 2; 0: quote bench-fleet's figure)")
    parser.add_argument("--ping-every", type=float, default=0.5, help="seconds between pings (default 0.5)")
    parser.add_argument("--log-level", default="info",
                        help="daemons' log level (default info: the master's auth lines time the re-authentication)")
    parser.add_argument("--settle", type=float, default=6.0, help="seconds between rounds (default 6)")
    parser.add_argument("--limit", type=float, default=120.0, help="give up a round after this (default 120 s)")
    common.add_load_args(parser)
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    args = parser.parse_args(argv)

    fleet = common.locate_fleet(args.fleet_dir)
    scratch = common.fresh_scratch("restart")
    common.wait_quiet(args.wait_load)
    load_start = os.getloadavg()
    results: dict[str, list[dict[str, float]]] = {}
    pgids: set[int] = set()
    plan = [("saltpan", args.size, args.rounds, False)]
    if args.swarm:
        plan.append(("saltpan", args.swarm, args.swarm_rounds, True))
    if args.salt_rounds:
        plan.append(("salt", args.size, args.salt_rounds, False))
    for kind, count, rounds, swarm in plan:
        label = f"{kind} {'swarm ' if swarm else ''}{count}"
        got, cluster = measure(kind, scratch, fleet, count, rounds, args, swarm)
        results[label] = got
        pgids |= cluster.pgids()
    load_end = os.getloadavg()
    left = plane.leftovers(pgids)

    rows = [line(label, rounds, args.limit) for label, rounds in results.items()]
    if not args.salt_rounds:
        rows.append([f"Salt 3008.3, {args.size} minions (../shared/bench-fleet/README.md, NOT this run)",
                     f"{BENCH_FLEET_SALT_20:.1f} s", "-", "-", "-"])
    saltpan_20 = common.median([r["all"] for r in results[f"saltpan {args.size}"]])
    text = "\n".join([
        f"`python bench/restart.py` on {common.today()}, {common.machine()}; load average (1/5/15 min) "
        f"{' / '.join(f'{x:.1f}' for x in load_start)} at the start, {' / '.join(f'{x:.1f}' for x in load_end)} "
        "at the end (the machine is shared with other work).",
        "",
        "Master SIGKILL, then the same master started again; seconds from the restart command until one "
        "`test.ping` to `*` got every minion's answer (pings launched every "
        f"{args.ping_every:g} s, {PINGS[0]} s timeout each, at most {PINGS[1]} at once, `--gather-job-timeout {PINGS[2]}`; "
        f"for the swarm one at a time with a {SWARM_PINGS[0]} s timeout and `--gather-job-timeout {SWARM_PINGS[2]}`), and until the new master's ports accepted connections "
        "(its own start-up), and (saltpan, from the master's info log) until the last minion's hello was "
        "accepted. Default settings on both systems.",
        "",
        common.table(["system, minions", "all answer (median)", "ports open (median)",
                      "all re-authenticated (median)", "all answer, each round (s)"], rows),
        "",
        f"- Target (issue 20): 20 minions within 3 s (median of 5 rounds): "
        f"**{'met' if saltpan_20 <= 3.0 else 'not met'}** ({seconds(saltpan_20, args.limit)} s)"
        + (f"; 1,000 swarm minions within 15 s: **"
           f"{'met' if common.median([r['all'] for r in results[f'saltpan swarm {args.swarm}']]) <= 15 else 'not met'}"
           "**" if args.swarm else "") + ".",
        "- How: the restarted master's Publisher (an XPUB) sees each minion's subscriber reconnect, with a "
        "hint that its session was of the earlier run, and sends a signed boot announcement "
        "(docs/protocol.md §6.1); minions re-authenticate at once, spread over "
        "accepted keys / announced rate seconds, instead of waiting for their next heartbeat (every 5 s) "
        "and a backoff.",
    ])
    common.publish(SECTION, text, not args.no_results, left)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
