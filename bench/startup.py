"""CLI start-up: ``saltpan --version`` against ``salt --version`` and the bare interpreter, in the same run.

    .venv/bin/python bench/startup.py                  # ~1 min; rewrites its bench/RESULTS.md section
    .venv/bin/python bench/startup.py --runs 5 --no-results

Whole processes, bytecode caching on (the .pyc files written at the first, untimed run, as a
user's installed package has them), alternating: the interpreter alone (``python -c pass``, the
floor no Python CLI goes under), ``saltpan --version``, and Salt 3008.3's ``salt --version``
from its venv (bench/salt_venv.py).  Wall time and CPU time (user + system, from wait4) per
run; the table gives medians, and the CPU time over the interpreter's, which a busy machine
disturbs less than wall time.  Beside it, the number of modules each imports
(``-X importtime``).  ``saltpan run`` as a whole process, against ``salt``, is in bench/jobs.py's
section.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import salt_venv  # noqa: E402

SECTION = "CLI start-up (bench/startup.py)"


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall s, user + system CPU s) of one whole process, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=common.bench_env())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_utime + usage.ru_stime


def imported(python: str, argv: list[str]) -> int:
    """Modules a command imports (lines of ``-X importtime``), the interpreter's own included."""
    proc = subprocess.run([python, "-X", "importtime", *argv], capture_output=True, text=True, env=common.bench_env(),
                          check=True)
    return sum(1 for line in proc.stderr.splitlines() if line.startswith("import time:") and "cumulative" not in line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each command (default 20)")
    parser.add_argument("--no-results", action="store_true", help="do not update bench/RESULTS.md")
    common.add_load_args(parser)
    args = parser.parse_args(argv)
    common.wait_quiet(args.wait_load)

    python = sys.executable
    saltpan = str(Path(python).parent / "saltpan")
    salt_py = salt_venv.salt_python()
    commands = {
        "python -c pass": ([python, "-c", "pass"], [python, "-c", "pass"]),
        "saltpan --version": ([saltpan, "--version"], [python, saltpan, "--version"]),
        "salt --version (Salt 3008.3)": ([str(salt_py.parent / "salt"), "--version"],
                                         [str(salt_py), str(salt_py.parent / "salt"), "--version"]),
    }
    loads = [os.getloadavg()[0]]
    for argv_run, _ in commands.values():   # untimed: .pyc files written, page cache warm
        timed(argv_run)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for index in range(args.runs):
        for name in names if index % 2 == 0 else reversed(names):
            wall, cpu = timed(commands[name][0])
            walls[name].append(wall)
            cpus[name].append(cpu)
    loads.append(os.getloadavg()[0])
    modules = {name: imported(commands[name][1][0], commands[name][1][1:]) for name in names}

    med = common.median
    floor_cpu, floor_wall = med(cpus["python -c pass"]), med(walls["python -c pass"])
    rows = []
    for name in names:
        rows.append([f"`{name}`", f"{med(walls[name]) * 1000:.0f} ms", f"{min(walls[name]) * 1000:.0f} ms",
                     f"{med(cpus[name]) * 1000:.0f} ms", f"{med(cpus[name]) / floor_cpu:.2f}x",
                     f"{med(walls[name]) - floor_wall:+.3f} s", str(modules[name]), common.today()])
    version_wall = med(walls["saltpan --version"])
    lines = [common.table(["command", "wall (median)", "wall (fastest)", "CPU user+sys (median)",
                           "CPU / interpreter's", "wall beyond the interpreter's", "modules imported", "date"], rows),
             "",
             f"- Target (issue 20): `saltpan --version` at most 60 ms: "
             f"**{'met' if version_wall <= 0.060 else 'not shown on this run'}** (median {version_wall * 1000:.0f} ms; "
             f"the interpreter alone took {floor_wall * 1000:.0f} ms in the same run).",
             f"- Machine: {common.machine()}; load average (1 min) at start / end: {loads[0]:.1f} / {loads[1]:.1f} "
             f"(2 cores, shared). {args.runs} runs of each, alternating, after one untimed run each; bytecode caching "
             "on. saltpan is installed editable in the bench venv: its path finder (a .pth hook) imports pathlib and "
             "urllib.parse at every interpreter start, in `python -c pass` too, which a wheel install does not.",
             "- `saltpan --version` prints a constant before any parser is built: it imports `runtime.cli.main` and "
             "nothing else beyond the interpreter's own modules (tests/unit/test_cli_startup.py keeps it so)."]
    common.publish(SECTION, "\n".join(lines), not args.no_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
