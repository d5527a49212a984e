"""cmd: run, run_all, retcode, shell (commands on this host)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["run", "run_all", "retcode", "shell", "run_stdout"]


def run_all(env: ModuleEnv, cmd: str, cwd: str | None = None, runas: str | None = None, shell: str | None = None,
            env_vars: dict | None = None, timeout: float | None = None, python_shell: bool = True,
            stdin: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run cmd; return {pid, retcode, stdout, stderr}."""
    extra_env = kwargs.get("env") if isinstance(kwargs.get("env"), (dict, list)) else env_vars
    try:
        res = cmdrun.run(cmd if python_shell else shlex.split(cmd), cwd=cwd, runas=runas, shell=shell, env=extra_env,
                         timeout=timeout, stdin=stdin, umask=kwargs.get("umask"), grains=env.grains)
    except cmdrun.CommandError as exc:
        from runtime.modules import CommandError

        raise CommandError(str(exc)) from None
    env.retcode = res.retcode
    return {"pid": res.pid, "retcode": res.retcode, "stdout": res.stdout, "stderr": res.stderr}


def run(env: ModuleEnv, cmd: str, **kwargs: Any) -> str:
    """Run cmd; return stdout and stderr combined (as Salt's cmd.run)."""
    res = run_all(env, cmd, **kwargs)
    out = res["stdout"]
    if res["stderr"]:
        out = f"{out}\n{res['stderr']}" if out else res["stderr"]
    return out


def run_stdout(env: ModuleEnv, cmd: str, **kwargs: Any) -> str:
    """Run cmd; return stdout only."""
    return run_all(env, cmd, **kwargs)["stdout"]


def shell(env: ModuleEnv, cmd: str, **kwargs: Any) -> str:
    """Like run, always through the shell."""
    return run(env, cmd, python_shell=True, **kwargs)


def retcode(env: ModuleEnv, cmd: str, **kwargs: Any) -> int:
    """Run cmd; return its exit status."""
    return run_all(env, cmd, **kwargs)["retcode"]
