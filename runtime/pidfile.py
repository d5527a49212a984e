"""Pid files of the daemons: written at start, removed at a clean stop.

A pid file that names a live saltpan process of the same role stops a second daemon from
starting on the same files (as Salt refuses to start a second salt-master); a stale one (the
process is gone, or the pid now belongs to something else) is replaced.
"""

from __future__ import annotations

import os


class PidFileError(Exception):
    """Another daemon holds the pid file (the message names it)."""


def _running_saltpan(pid: int, role: str) -> bool:
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True  # no /proc: assume the worst
    words = [a.decode(errors="replace") for a in argv]
    return role in words and any("saltpan" in w or w == "runtime" for w in words)


def claim(path: str | None, role: str) -> None:
    """Write this process's pid to ``path`` (creating its directory), unless a live saltpan
    ``role`` daemon already owns it."""
    if not path:
        return
    try:
        with open(path, encoding="ascii") as fh:
            held = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        held = 0
    if held and _running_saltpan(held, role):
        raise PidFileError(f"a saltpan {role} is already running (pid {held}, pid file {path}); stop it first, "
                           "or give this one another pidfile, sock_dir and ports")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(f"{os.getpid()}\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def release(path: str | None) -> None:
    """Remove the pid file if it still names this process."""
    if not path:
        return
    try:
        with open(path, encoding="ascii") as fh:
            if int(fh.read().strip() or 0) != os.getpid():
                return
        os.unlink(path)
    except (OSError, ValueError):
        pass
