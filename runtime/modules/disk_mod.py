"""disk: file system usage from df (usage, inodeusage, percent), with Salt's keys."""

from __future__ import annotations

import logging
import subprocess
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.disk")


def _df(*flags: str) -> list[list[str]]:
    """The rows of `df -P <flags>` (a file system name with spaces kept whole)."""
    out = subprocess.run(["df", "-P", *flags], capture_output=True, text=True, timeout=120, check=False,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}).stdout
    rows = []
    for line in out.splitlines():
        if not line or line.startswith("Filesystem"):
            continue
        comps = line.split()
        while len(comps) >= 2 and not comps[1].isdigit():
            comps[0] = f"{comps[0]} {comps[1]}"
            comps.pop(1)
        if len(comps) >= 6:
            rows.append(comps)
    return rows


# the df flags Salt's disk module lets through, one letter each (its _clean_flags)
DF_FLAGS = frozenset("aBhHikPlTtxv")


def _flags(args: Any, caller: str) -> list[str]:
    """Salt's check: every character of ``args`` must be an allowed df flag ('l', 'hT'; no dash)."""
    if args is None or args == "":
        return []
    text = str(args)
    if any(flag not in DF_FLAGS for flag in text):
        from runtime.modules import CommandError

        raise CommandError(f"Invalid flag passed to {caller}")
    return [f"-{text}"]


@reads_host(absent=constant({}))
def usage(env: ModuleEnv, args: Any = None) -> dict[str, Any]:
    """{mount point: {filesystem, 1K-blocks, used, available, capacity}} of the mounted file systems
    (args: df flags, e.g. 'l' for local ones only)."""
    return {c[5]: {"filesystem": c[0], "1K-blocks": c[1], "used": c[2], "available": c[3], "capacity": c[4]}
            for c in _df(*_flags(args, "disk.usage"))}


@reads_host(absent=constant({}))
def inodeusage(env: ModuleEnv, args: Any = None) -> dict[str, Any]:
    """{mount point: {inodes, used, free, use, filesystem}} of the mounted file systems."""
    return {c[5]: {"inodes": c[1], "used": c[2], "free": c[3], "use": c[4], "filesystem": c[0]}
            for c in _df("-i", *_flags(args, "disk.inodeusage"))}


@reads_host(absent=constant({}))
def percent(env: ModuleEnv, args: str | None = None) -> Any:
    """The used capacity ('24%') of the file system mounted at args, or {mount point: capacity}."""
    found = {c[5]: c[4] for c in _df()}
    if args and args not in found:
        log.error("Problem parsing disk usage information: Partition '%s' does not exist!", args)
        return {}
    return found[args] if args else found
