"""cmd: run commands on this host (run, shell, run_all, run_stdout, retcode) and find programs (which,
has_exec).

Offline (saltpan compile, the master's pillar) nothing runs: a command answers as one whose program
is not installed (no output, exit status 127) and which/has_exec find nothing.
"""

from __future__ import annotations

import shlex
import shutil
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.modules.registry import constant, reads_host, runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

# The first parameter is `menv` (the ModuleEnv), not `env`: Salt's cmd functions take an `env`
# keyword (environment variables for the command).

_NOT_RUN = {"pid": 0, "retcode": 127, "stdout": "", "stderr": ""}


@runs_command(absent=constant(_NOT_RUN))
def run_all(menv: ModuleEnv, cmd: Any, cwd: str | None = None, runas: str | None = None, shell: str | None = None,
            env: Any = None, timeout: float | None = None, python_shell: Any = None, stdin: str | None = None,
            **kwargs: Any) -> dict[str, Any]:
    """Run cmd; return {pid, retcode, stdout, stderr}."""
    if python_shell is None:
        python_shell = True  # Salt's default for calls from the command line and jobs
    if isinstance(cmd, bool):   # `cmd.run false`: the CLI read the word as YAML; the command is the word
        cmd = "true" if cmd else "false"   # (Salt runs `False`, which no shell has)
    elif isinstance(cmd, (int, float)):
        cmd = str(cmd)
    elif not isinstance(cmd, (str, list, tuple)):
        from runtime.modules import CommandError

        raise CommandError(f"the command must be a command line or a list of words, got a {type(cmd).__name__}")
    argv = shlex.split(cmd) if isinstance(cmd, str) and not python_shell else cmd
    extra_env = env if isinstance(env, (dict, list)) else kwargs.get("env_vars")
    try:
        res = cmdrun.run(argv, cwd=cwd, runas=runas, shell=shell, env=extra_env, timeout=timeout, stdin=stdin,
                         umask=kwargs.get("umask"), grains=menv.grains)
    except cmdrun.CommandError as exc:
        from runtime.modules import CommandError

        raise CommandError(str(exc)) from None
    menv.retcode = res.retcode
    return {"pid": res.pid, "retcode": res.retcode, "stdout": res.stdout, "stderr": res.stderr}


@runs_command(absent=constant(""))
def run(menv: ModuleEnv, cmd: Any, **kwargs: Any) -> str:
    """Run cmd; return stdout and stderr combined (as Salt's cmd.run)."""
    res = run_all(menv, cmd, **kwargs)
    out = res["stdout"]
    if res["stderr"]:
        out = f"{out}\n{res['stderr']}" if out else res["stderr"]
    return out


@runs_command(absent=constant(""))
def run_stdout(menv: ModuleEnv, cmd: Any, **kwargs: Any) -> str:
    """Run cmd; return stdout only."""
    return run_all(menv, cmd, **kwargs)["stdout"]


@runs_command(absent=constant(""))
def run_stderr(menv: ModuleEnv, cmd: Any, **kwargs: Any) -> str:
    """Run cmd; return stderr only."""
    return run_all(menv, cmd, **kwargs)["stderr"]


@runs_command(absent=constant(""))
def shell(menv: ModuleEnv, cmd: Any, **kwargs: Any) -> str:
    """Like run, always through the shell."""
    kwargs["python_shell"] = True
    return run(menv, cmd, **kwargs)


@runs_command(absent=constant(127))
def retcode(menv: ModuleEnv, cmd: Any, **kwargs: Any) -> int:
    """Run cmd; return its exit status."""
    return run_all(menv, cmd, **kwargs)["retcode"]


@reads_host(absent=constant(None))
def which(menv: ModuleEnv, cmd: str) -> str | None:
    """The full path of a program on PATH, or None."""
    return shutil.which(cmd)


@reads_host(absent=constant(None))
def which_bin(menv: ModuleEnv, cmds: list[str]) -> str | None:
    """The full path of the first of cmds found on PATH, or None."""
    for cmd in cmds:
        found = shutil.which(cmd)
        if found:
            return found
    return None


@reads_host(absent=constant(False))
def has_exec(menv: ModuleEnv, cmd: str) -> bool:
    """True when the program is on PATH."""
    return shutil.which(cmd) is not None
