"""Shared helpers for the benchmarks: the bench fleet, timing, memory, RESULTS.md.

Standard library only: the helpers that run inside the Salt venv import it too.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / ".work"
RESULTS = BENCH_DIR / "RESULTS.md"
SANDBOX_PLACEHOLDER = "__SANDBOX__"


# -- the bench fleet -------------------------------------------------------------------

def default_fleet_dir() -> Path:
    """``<repo>/../shared/bench-fleet`` (a worktree under /work/wt finds it through the shared symlink)."""
    for candidate in (REPO_DIR.parent / "shared" / "bench-fleet", REPO_DIR.parent.parent / "shared" / "bench-fleet"):
        if (candidate / "grains.json").exists():
            return candidate
    return REPO_DIR.parent / "shared" / "bench-fleet"


def add_fleet_args(parser: Any) -> None:
    parser.add_argument("--fleet-dir", type=Path, default=None,
                        help="the bench fleet (default: <repo>/../shared/bench-fleet)")


@dataclass(frozen=True)
class Fleet:
    root: Path

    @property
    def pillar_dir(self) -> Path:
        return self.root / "pillar"

    @property
    def states_dir(self) -> Path:
        return self.root / "states"

    @property
    def reference_dir(self) -> Path:
        return self.root / "salt-reference"


def locate_fleet(fleet_dir: Path | None) -> Fleet:
    root = Path(fleet_dir).resolve() if fleet_dir else default_fleet_dir()
    if not (root / "grains.json").is_file():
        raise SystemExit(f"no bench fleet at {root} (grains.json missing); pass --fleet-dir")
    return Fleet(root)


def replace_placeholder(data: Any, value: str, placeholder: str = SANDBOX_PLACEHOLDER) -> Any:
    """A copy of data with every occurrence of placeholder inside strings replaced."""
    if isinstance(data, str):
        return data.replace(placeholder, value)
    if isinstance(data, dict):
        return {replace_placeholder(k, value, placeholder): replace_placeholder(v, value, placeholder)
                for k, v in data.items()}
    if isinstance(data, list):
        return [replace_placeholder(v, value, placeholder) for v in data]
    return data


def sandbox_for(scratch: Path, minion_id: str) -> str:
    return str(scratch / minion_id)


def load_minions(fleet: Fleet, scratch: Path, create: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """[(minion_id, grains)] with ``__SANDBOX__`` replaced by ``<scratch>/<minion_id>``; grains carry ``id``."""
    with open(fleet.root / "grains.json", encoding="utf-8") as fh:
        raw = json.load(fh)
    out = []
    for entry in raw["minions"]:
        minion_id = entry["id"]
        sandbox = sandbox_for(scratch, minion_id)
        if create:
            os.makedirs(sandbox, exist_ok=True)
        grains = replace_placeholder(entry.get("grains") or {}, sandbox)
        grains["id"] = minion_id
        out.append((minion_id, grains))
    return out


def sample_ids(ids: Sequence[str], count: int, always: Sequence[str] = ()) -> list[str]:
    """count ids spread evenly over the fleet (deterministic), the ``always`` ones first."""
    picked = [i for i in always if i in ids]
    step = max(1, len(ids) // max(1, count))
    for minion_id in ids[::step]:
        if len(picked) >= count:
            break
        if minion_id not in picked:
            picked.append(minion_id)
    return picked


# -- the compile helpers' command line (bench/*_helper.py) ------------------------------------

def add_helper_args(parser: Any, sample_help: str | None = None) -> None:
    """--fleet-dir, --scratch, --out, --sample and --limit, which every compile helper takes."""
    add_fleet_args(parser)
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", default="", help=sample_help)
    parser.add_argument("--limit", type=int, default=0, help="only the first N minions")


def helper_minions(args: Any, sandbox: Path) -> tuple[Fleet, list[tuple[str, dict[str, Any]]], set[str]]:
    """The fleet, its minions (the first --limit; sandboxes under sandbox) and the --sample ids."""
    fleet = locate_fleet(args.fleet_dir)
    minions = load_minions(fleet, sandbox)
    if args.limit:
        minions = minions[: args.limit]
    return fleet, minions, set(filter(None, args.sample.split(",")))


def profiled(path: Path | None, fn: Callable[[], T]) -> T:
    """fn(), under cProfile with the stats written to path when path is given."""
    if not path:
        return fn()
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    result = fn()
    profiler.disable()
    profiler.dump_stats(str(path))
    return result


# -- daemons on 127.0.0.1 ----------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def username() -> str:
    """The user this process runs as (what daemon configs name in ``user``)."""
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.2, what: str = "condition") -> Any:
    """predicate's first truthy value, polled every interval s; TimeoutError after timeout s."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what} (last: {str(last)[:300]})")


# -- timing and memory -----------------------------------------------------------------

def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def time_call(fn: Callable[[], Any], runs: int) -> list[float]:
    """Wall-clock seconds of each of ``runs`` calls of fn."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def bench_env() -> dict[str, str]:
    """The environment benchmark processes run in: this one, with Python bytecode caching on.

    A shell that sets PYTHONDONTWRITEBYTECODE would make saltpan (installed editable, so
    compiled on first import) recompile its modules at every start, while Salt's venv
    holds the .pyc files pip wrote at install: not what a user's machine does.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@dataclass
class ProcessRun:
    seconds: float
    max_rss_kib: int
    returncode: int
    stdout: str
    stderr: str


def run_process(argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None,
                timeout: float = 1800, capture_dir: Path | None = None) -> ProcessRun:
    """Run argv: its wall time, its own peak RSS (from wait4's rusage), exit status and output.

    env defaults to bench_env().

    Output goes to files in capture_dir (a pipe could fill up and stall the child while we
    block in wait4); without capture_dir it is discarded.
    """
    import tempfile
    import threading

    env = bench_env() if env is None else env
    with tempfile.TemporaryDirectory(dir=capture_dir) as tmp:
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with open(out_path, "wb") as out_fh, open(err_path, "wb") as err_fh:
            start = time.perf_counter()
            proc = subprocess.Popen(list(argv), stdout=out_fh, stderr=err_fh, env=env, cwd=cwd)
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except BaseException:  # a signal turned into an exception (bench/cluster.py): leave no child behind
                proc.kill()
                proc.wait()
                raise
            finally:
                timer.cancel()
            elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out = out_path.read_text(encoding="utf-8", errors="replace")
        err = err_path.read_text(encoding="utf-8", errors="replace")
    if proc.returncode == -9 and elapsed >= timeout:
        raise subprocess.TimeoutExpired(list(argv), timeout, out, err)
    return ProcessRun(elapsed, int(usage.ru_maxrss), proc.returncode, out, err)


def wait_load_below(limit: float, max_wait: float = 600) -> tuple[float, float]:
    """Wait (at most max_wait s) until the 1-minute load average is under limit: (load, seconds waited).

    The machines are shared: final runs start when the others' work has calmed down.
    """
    start = time.monotonic()
    while limit > 0 and os.getloadavg()[0] >= limit and time.monotonic() - start < max_wait:
        time.sleep(10)
    return os.getloadavg()[0], time.monotonic() - start


def wait_quiet(limit: float) -> None:
    """wait_load_below(limit), saying how it went."""
    load, waited = wait_load_below(limit)
    print(f"load average {load:.1f} after waiting {waited:.0f} s", flush=True)


def add_load_args(parser: Any) -> None:
    parser.add_argument("--wait-load", type=float, default=3.0,
                        help="first wait (at most 10 min) for the 1-minute load average to drop under this "
                             "(default 3; 0: don't wait)")


def self_rss_kib() -> int:
    """Peak RSS of this process so far, in KiB."""
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def current_rss_kib() -> int:
    """Current RSS of this process, in KiB (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return self_rss_kib()


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f} MiB"


# -- reporting ---------------------------------------------------------------------------

def machine() -> str:
    """A one-line description of this machine for the results table."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            kib = int(fh.readline().split()[1])
            mem = f", {kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores {cpu}{mem}, Python {platform.python_version()}"


def today() -> str:
    return datetime.date.today().isoformat()


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


_HEADING = re.compile(r"^## (.+?)\s*$", re.M)

_RESULTS_INTRO = """# saltpan benchmark results

Written by the scripts in `bench/` (each owns one section and rewrites it when run).
saltpan and real Salt are always measured in the same run on the same machine, alternating,
and figures are medians: the machines are shared and noisy, so compare ratios, not absolutes.
"""


def update_results(title: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the ``## title`` section of RESULTS.md with body."""
    text = path.read_text(encoding="utf-8") if path.exists() else _RESULTS_INTRO
    section = f"## {title}\n\n{body.strip()}\n"
    matches = list(_HEADING.finditer(text))
    for index, found in enumerate(matches):
        if found.group(1) == title:
            end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
            text = text[: found.start()] + section + ("\n" if end < len(text) else "") + text[end:]
            break
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def publish(title: str, text: str, save: bool, left: Sequence[str] = (), path: Path = RESULTS) -> None:
    """Print a script's report (and processes left running, on stderr); save: make it RESULTS.md's ``## title``."""
    print()
    print(text)
    if left:
        print("\nstill running after stop:\n" + "\n".join(left), file=sys.stderr)
    if save:
        update_results(title, text, path)
        print(f"\nupdated {path}")


def fresh_scratch(name: str) -> Path:
    """``bench/.work/<name>``, emptied."""
    scratch = WORK_DIR / name
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return scratch


def canonical(data: Any) -> Any:
    """JSON round trip with sorted keys: what two pillars are compared as."""
    return json.loads(json.dumps(data, sort_keys=True, default=str))


def diff_paths(left: Any, right: Any, path: str = "", limit: int = 10) -> list[str]:
    """Human-readable differences between two JSON-like values (at most ``limit``)."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                sub = f"{where}:{key}" if where else str(key)
                if key not in a:
                    out.append(f"{sub}: only in Salt")
                elif key not in b:
                    out.append(f"{sub}: only in saltpan")
                else:
                    walk(a[key], b[key], sub)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{index}]")
            return
        if a != b:
            out.append(f"{where or '<root>'}: saltpan {json.dumps(a)[:80]} != Salt {json.dumps(b)[:80]}")

    walk(left, right, path)
    return out


# -- configs both implementations read ----------------------------------------------------

def write_minion_config(conf_dir: Path, scratch: Path, pillar_roots: dict[str, list[str]],
                        file_roots: dict[str, list[str]], minion_id: str | None = None,
                        grains: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> Path:
    """A minion config (``<conf_dir>/minion``) that saltpan and ``salt-call --local -c conf_dir`` both read.

    Every directory Salt writes to sits under scratch.
    """
    root = scratch / "salt-root"
    config: dict[str, Any] = {
        "file_client": "local",
        "root_dir": str(root),
        "pki_dir": str(root / "pki"),
        "cachedir": str(root / "cache"),
        "sock_dir": str(root / "sock"),
        "log_file": str(root / "minion.log"),
        "log_level_logfile": "quiet",
        "pillar_roots": pillar_roots,
        "file_roots": file_roots,
    }
    if minion_id:
        config["id"] = minion_id
    if grains is not None:
        config["grains"] = grains
    config.update(extra or {})
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "minion"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


def write_fleet_config(conf_dir: Path, scratch: Path, fleet: Fleet, minion_id: str | None = None,
                       grains: dict[str, Any] | None = None) -> Path:
    """write_minion_config with the fleet's pillar and state trees as pillar_roots and file_roots (base)."""
    return write_minion_config(conf_dir, scratch, {"base": [str(fleet.pillar_dir)]},
                               {"base": [str(fleet.states_dir)]}, minion_id, grains)
