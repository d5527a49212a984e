"""Back-to-back ``test.ping`` jobs through an in-process LocalClient (used by bench/jobs.py).

Every job targets ``--target`` (a glob, ``*`` by default; bench/cluster.py names one minion).
Run with the project's python for saltpan (``runtime.client.LocalClient``) or with the
Salt venv's python for Salt (``salt.client.LocalClient(c_path=...)``): ``--kind`` says
which.  One client object serves every job, as a program using the client API keeps
one.  After one untimed job, jobs run one after the other until both ``--min-jobs``
jobs and ``--min-seconds`` seconds are done; each job must bring back ``True`` from
every one of ``--expect`` minions.

Writes JSON to --out: {"latencies": [s, ...], "seconds", "jobs", "incomplete"}.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))


def saltpan_ping(conf: str, timeout: float, target: str = "*") -> Callable[[], dict[str, Any]]:
    sys.path.insert(0, str(BENCH.parent))
    from runtime import config
    from runtime.client import LocalClient

    client = LocalClient(config.load(conf, "master"))

    def ping() -> dict[str, Any]:
        result = client.cmd(target, "test.ping", timeout=timeout)
        return {minion: ret.get("return") for minion, ret in result.returns.items()}

    return ping


def salt_ping(conf: str, timeout: float, target: str = "*") -> Callable[[], dict[str, Any]]:
    import salt.client

    client = salt.client.LocalClient(c_path=conf)

    def ping() -> dict[str, Any]:
        return client.cmd(target, "test.ping", timeout=timeout)

    return ping


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("saltpan", "salt"), required=True)
    parser.add_argument("--conf", required=True, help="the master's config file")
    parser.add_argument("--expect", type=int, required=True, help="minions that must answer every job")
    parser.add_argument("--min-jobs", type=int, default=10)
    parser.add_argument("--min-seconds", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=30.0, help="per job")
    parser.add_argument("--target", default="*", help="the glob every job targets (default '*')")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    maker = saltpan_ping if args.kind == "saltpan" else salt_ping
    ping = maker(args.conf, args.timeout, args.target)
    ping()  # untimed: connections, first-use imports
    latencies: list[float] = []
    incomplete = 0
    start = time.perf_counter()
    while len(latencies) < args.min_jobs or time.perf_counter() - start < args.min_seconds:
        one = time.perf_counter()
        returns = ping()
        latencies.append(time.perf_counter() - one)
        if len(returns) != args.expect or not all(v is True for v in returns.values()):
            incomplete += 1
    seconds = time.perf_counter() - start
    args.out.write_text(json.dumps({"latencies": latencies, "seconds": seconds, "jobs": len(latencies),
                                    "incomplete": incomplete}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
