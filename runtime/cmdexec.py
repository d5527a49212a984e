"""Run a command on this host: shell or argv, cwd, extra env, runas, timeout."""

from __future__ import annotations

import os
import pwd
import shlex
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class CmdResult:
    pid: int
    retcode: int
    stdout: str
    stderr: str


def _demote(user: str):
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise ValueError(f"runas user {user!r} does not exist") from None

    def apply() -> None:
        os.setsid()
        os.initgroups(entry.pw_name, entry.pw_gid)
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)

    return apply, entry


def run(cmd: str | list[str], cwd: str | None = None, env: Mapping[str, Any] | None = None,
        runas: str | None = None, shell: str | None = None, timeout: float | None = None,
        stdin: str | None = None, python_shell: bool = True) -> CmdResult:
    """Run cmd and capture its output. A missing cwd or user is a clear error."""
    if cwd and not os.path.isdir(cwd):
        raise ValueError(f"cwd {cwd!r} is not a directory")
    child_env = dict(os.environ)
    if env:
        child_env.update({str(k): str(v) for k, v in env.items()})
    preexec = os.setsid
    if runas and runas != pwd.getpwuid(os.geteuid()).pw_name:
        if os.geteuid() != 0:
            raise ValueError(f"cannot run as {runas!r}: only root can change user")
        preexec, entry = _demote(runas)
        child_env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    if isinstance(cmd, list):
        argv: list[str] | str = [str(c) for c in cmd]
        use_shell = False
    elif python_shell:
        argv = [shell or "/bin/sh", "-c", cmd]
        use_shell = False
    else:
        argv = shlex.split(cmd)
        use_shell = False
    proc = subprocess.Popen(argv, cwd=cwd or None, env=child_env, shell=use_shell, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            preexec_fn=preexec, text=True, errors="replace")
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return CmdResult(proc.pid, -signal.SIGKILL, out.rstrip("\n"),
                         (err.rstrip("\n") + f"\ntimed out after {timeout} seconds").strip())
    return CmdResult(proc.pid, proc.returncode, out.rstrip("\n"), err.rstrip("\n"))


def retcode(cmd: str, **kwargs: Any) -> int:
    """Exit status of cmd (unless/onlyif checks); options as run()."""
    allowed = {k: v for k, v in kwargs.items() if k in ("cwd", "env", "runas", "shell", "timeout")}
    return run(cmd, **allowed).retcode
