"""status: the clock (time) and this host's state: uptime, loadavg, meminfo, cpuinfo, diskusage,
pid, version (Linux: /proc, statvfs and ps, as Salt's status module reads them)."""

from __future__ import annotations

import datetime
import fnmatch
import os
import re
import shutil
import subprocess
import time
from typing import TYPE_CHECKING, Any, NoReturn

from runtime.modules.registry import constant, pure, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _offline(env: ModuleEnv, *args: Any, **kwargs: Any) -> NoReturn:
    """raises an error: there is no host to read while compiling offline."""
    raise _error("reads the minion's host: not available while compiling offline")


@pure(name="time")
def time_(env: ModuleEnv, format: str = "%A, %d. %B %Y %I:%M%p") -> str:  # noqa: A002 - Salt's argument name
    """The current local time, formatted with strftime."""
    return datetime.datetime.today().strftime(format)


@reads_host(absent=_offline)
def uptime(env: ModuleEnv) -> dict[str, Any]:
    """{seconds, since_iso, since_t, days, time: 'H:M', users} since the host booted."""
    now = time.time()
    try:
        with open("/proc/uptime", encoding="ascii") as fh:
            seconds = int(float(fh.read().split()[0]))
    except OSError:
        raise _error("File /proc/uptime was not found.") from None
    boot = datetime.datetime.fromtimestamp(now - seconds, datetime.UTC).replace(tzinfo=None)
    up = datetime.datetime.fromtimestamp(now, datetime.UTC).replace(tzinfo=None) - boot
    out: dict[str, Any] = {"seconds": seconds, "since_iso": boot.isoformat(), "since_t": int(now - seconds),
                           "days": up.days, "time": f"{up.seconds // 3600}:{up.seconds % 3600 // 60}"}
    who = shutil.which("who")
    if who:
        listed = subprocess.run([who, "-s"], capture_output=True, text=True, timeout=30, check=False).stdout
        out["users"] = len(listed.rstrip("\n").split("\n"))   # Salt counts the lines of `who -s` (1 when empty)
    return out


@reads_host(absent=_offline)
def loadavg(env: ModuleEnv) -> dict[str, float]:
    """{1-min, 5-min, 15-min} load averages."""
    one, five, fifteen = os.getloadavg()
    return {"1-min": one, "5-min": five, "15-min": fifteen}


@reads_host(absent=constant({}))
def meminfo(env: ModuleEnv) -> dict[str, Any]:
    """/proc/meminfo as {field: {value, unit}}."""
    out: dict[str, Any] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                comps = line.split()
                if not comps:
                    continue
                entry = {"value": comps[1]}
                if len(comps) > 2:
                    entry["unit"] = comps[2]
                out[comps[0].rstrip(":")] = entry
    except OSError:
        return {}
    return out


@reads_host(absent=constant({}))
def cpuinfo(env: ModuleEnv) -> dict[str, Any]:
    """/proc/cpuinfo as {field: value} (flags as a list; the last processor's values)."""
    out: dict[str, Any] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if not sep:
                    continue
                key, value = key.strip(), value.strip()
                out[key] = value.split() if key == "flags" else value
    except OSError:
        return {}
    return out


@reads_host(absent=constant({}))
def diskusage(env: ModuleEnv, *args: str) -> dict[str, Any]:
    """{mount point: {available, total}} in bytes, for the paths given and the mounts whose file
    system type matches the globs given (every mount without arguments)."""
    selected = {a for a in args if a.startswith("/")}
    fstypes = {a for a in args if not a.startswith("/")} or (set() if args else {"*"})
    if fstypes:
        try:
            with open("/proc/mounts", encoding="utf-8") as fh:
                mounts = fh.read().splitlines()
        except OSError:
            return {}
        for line in mounts:
            comps = line.split()
            if len(comps) >= 3 and any(fnmatch.fnmatch(comps[2], t) for t in fstypes):
                selected.add(comps[1])
    out = {}
    for path in selected:
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        out[path] = {"available": st.f_bavail * st.f_bsize, "total": st.f_blocks * st.f_bsize}
    return out


@reads_host(absent=constant(""))
def pid(env: ModuleEnv, sig: str) -> str:
    """The ids of the processes whose `ps -efHww` line matches the regex sig, one per line (this
    process left out)."""
    listing = subprocess.run(["ps", "-efHww"], capture_output=True, text=True, timeout=60, check=False).stdout
    mine = str(os.getpid())
    found = [line.split()[1] for line in listing.splitlines()[1:]
             if len(line.split()) > 1 and line.split()[1] != mine and re.search(sig, line)]
    return "\n".join(found)


@reads_host(absent=constant(""))
def version(env: ModuleEnv) -> str:
    """The kernel's version string (/proc/version)."""
    try:
        with open("/proc/version", encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""
