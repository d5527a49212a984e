"""saltpan's in-process pillar compile over the bench fleet (runs in the project's venv).

One ``PillarCompiler`` (as ``saltpan compile`` builds it) compiles every minion
in turn; with ``--jobs N`` the fleet is split over N forked processes after the
compiler is built (the parallel figure).

Writes JSON to --out: {"minions", "seconds", "errors", "pillars": {id: pillar for --sample}}.
Used by bench/compile_pillar.py; ``--profile FILE`` writes a cProfile of the sequential run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
import common  # noqa: E402


def build_compiler(fleet: common.Fleet, scratch: Path):
    """The compiler ``saltpan compile --config`` builds, from a config naming the fleet's trees."""
    from runtime import pipeline
    from runtime.cli.options import offline_config

    path = common.write_fleet_config(scratch / "saltpan-conf", scratch, fleet)
    return pipeline.pillar_compiler(offline_config(str(path)))


def compile_all(compiler, minions, sample: set[str]) -> tuple[int, dict]:
    errors = 0
    pillars = {}
    for minion_id, grains in minions:
        result = compiler.compile(minion_id, grains)
        if result.errors:
            errors += 1
        if minion_id in sample:
            pillars[minion_id] = common.canonical(result.pillar)
    return errors, pillars


def compile_parallel(compiler, minions, jobs: int) -> int:
    """Fork jobs children, each compiling a contiguous share; returns the error count."""
    children = []
    share = (len(minions) + jobs - 1) // jobs
    for index in range(jobs):
        part = minions[index * share:(index + 1) * share]
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(read_fd)
            code = 0
            try:
                errors, _ = compile_all(compiler, part, set())
                os.write(write_fd, str(errors).encode())
            except BaseException:  # noqa: BLE001 - report through the exit status
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        children.append((pid, read_fd))
    errors = 0
    for pid, read_fd in children:
        with os.fdopen(read_fd, "rb") as fh:
            text = fh.read().decode() or "0"
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"a compile child (pid {pid}) failed")
        errors += int(text)
    return errors


def main() -> int:
    parser = argparse.ArgumentParser()
    common.add_helper_args(parser)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the compile loop here")
    args = parser.parse_args()

    fleet, minions, sample = common.helper_minions(args, args.scratch)
    setup_start = time.perf_counter()
    compiler = build_compiler(fleet, args.scratch)
    setup = time.perf_counter() - setup_start
    pillars: dict = {}
    start = time.perf_counter()
    if args.jobs > 1:
        errors = compile_parallel(compiler, minions, args.jobs)
    else:
        errors, pillars = common.profiled(args.profile, lambda: compile_all(compiler, minions, sample))
    seconds = time.perf_counter() - start
    result = {"minions": len(minions), "seconds": seconds, "setup_seconds": setup, "jobs": args.jobs,
              "errors": errors, "pillars": pillars, "rss_kib_end": common.current_rss_kib()}
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
