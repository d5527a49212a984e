"""Optional cProfile of a whole process body, for benchmarks (bench/README.md).

With ``SALTPAN_PROFILE_DIR`` in the environment, :func:`run_profiled` runs the body under cProfile
and writes ``<label>-<pid>.prof`` there when the body returns (a daemon's body returns after
SIGTERM); timed by the process's CPU clock when ``SALTPAN_PROFILE_CPU`` is set too, else by the
wall clock.  Without it, the body just runs."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_profiled(label: str, body: Callable[..., T], *args: Any) -> T:
    profile_dir = os.environ.get("SALTPAN_PROFILE_DIR")
    if not profile_dir:
        return body(*args)
    import cProfile

    profiler = cProfile.Profile(time.process_time) if os.environ.get("SALTPAN_PROFILE_CPU") else cProfile.Profile()
    try:
        return profiler.runcall(body, *args)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a second SIGTERM must not cut the file short
        profiler.dump_stats(os.path.join(profile_dir, f"{label}-{os.getpid()}.prof"))
