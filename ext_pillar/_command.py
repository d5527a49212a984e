"""Shared helper of the command drivers (cmd_json, cmd_yaml): run a command for a minion."""

from __future__ import annotations

import os
import re
import signal
import subprocess

from ext_pillar import _deadline
from ext_pillar._errors import DriverError

# a minion id substituted into a shell command must not be able to change the command
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=,-]*$")
_MAX_OUTPUT = 64 * 1024 * 1024


def command_for(command: str, minion_id: str) -> str:
    """The command with every ``%s`` replaced by the minion id (as Salt does)."""
    if not isinstance(command, str) or not command.strip():
        raise DriverError(f"the command must be a non-empty string, got {command!r}")
    if "%s" in command and not _SAFE_ID.match(minion_id):
        raise DriverError(f"refusing to put the minion id {minion_id!r} into a shell command: it holds characters "
                          "a shell would interpret")
    return command.replace("%s", minion_id)


def run_for_minion(command: str, minion_id: str, timeout: float | None = None) -> str:
    """Run ``command`` in a shell for ``minion_id``; its stdout, or a DriverError.

    The command runs in its own process group, which is killed as a whole when
    ``timeout`` (bounded by the call's ext_pillar_timeout) passes.  A non-zero
    exit status is an error naming the status and the last line of stderr.
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise DriverError(f"timeout must be a positive number of seconds, got {timeout!r}")
    cmd = command_for(command, minion_id)
    limit = _deadline.bounded(timeout)
    proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise DriverError(f"command {cmd!r} did not finish within {_deadline.nominal(timeout) or limit:.3g} s and was "
                          "killed") from None
    except BaseException:
        _kill_group(proc)
        proc.communicate()
        raise
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        why = f": {lines[-1]}" if lines else ""
        status = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
                  else f"exited with status {proc.returncode}")
        raise DriverError(f"command {cmd!r} {status}{why}")
    if len(out) > _MAX_OUTPUT:
        raise DriverError(f"command {cmd!r} printed more than {_MAX_OUTPUT // (1024 * 1024)} MiB")
    return out.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
