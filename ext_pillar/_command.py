"""Shared helper of the command drivers: run a command for a minion."""

from __future__ import annotations

import subprocess


def run_for_minion(command: str, minion_id: str, timeout: float | None = None) -> str:
    """Run `command` (``%s`` replaced by the minion id) in a shell; its stdout, or an error."""
    if not isinstance(command, str) or not command.strip():
        raise ValueError("the command must be a non-empty string")
    cmd = command % minion_id if "%s" in command else command
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"command {cmd!r} exited with status {proc.returncode}: {err[0]}")
    return proc.stdout
