"""The ``cmd`` state module: run commands and scripts.

``cmd.run`` returns Salt's changes ``{pid, retcode, stdout, stderr}``; in test mode it
runs nothing and reports result None with changes ``{cmd: <command>}``. ``cmd.wait`` does
nothing by itself; its ``mod_watch`` runs the command when a watched state changed.

``unless``/``onlyif``/``creates`` are global arguments that the executor evaluates for every
state (with :func:`runtime.cmdrun.evaluate_conditions`) and strips before calling the state
function. When they are still present (a direct call), these functions evaluate them
themselves, with the same helper, so either way they are evaluated exactly once.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["mod_watch", "run", "script", "wait", "wait_script"]


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": False, "comment": ""}


def _conditions(ctx: StateContext, kwargs: dict[str, Any], opts: Mapping[str, Any]) -> dict[str, Any] | None:
    """A skip return when unless/onlyif/creates (left in kwargs) say the command must not run."""
    args = {k: kwargs.pop(k) for k in cmdrun.CHECK_KEYS if k in kwargs}
    if not args:
        return None
    args.update({k: v for k, v in opts.items() if v is not None})
    outcome = cmdrun.evaluate_conditions(args, ctx.grains, ctx.functions)
    if outcome is None or not outcome.skip:
        return None
    return {"changes": {}, "result": True, "comment": outcome.comment, "skip_watch": outcome.skip_watch}


def _is_true(value: Any) -> bool:
    if value and str(value).lower() in ("true", "yes", "1"):
        return True
    if str(value).lower() in ("false", "no", "0"):
        return False
    raise ValueError(f"Failed parsing boolean value: {value}")


def _reinterpreted(state: dict[str, Any]) -> dict[str, Any]:
    """Salt's ``stateful``: the command's last stdout line (or JSON) describes the state."""
    output = state["changes"]
    state["changes"] = {}
    state["comment"] = ""
    out = output.get("stdout")
    if not out:
        if output.get("stderr"):
            state["comment"] = output["stderr"]
        return state
    is_json = False
    idx = -1
    try:
        data = json.loads(out)
        if not isinstance(data, dict):
            state.update(result=False, comment="script JSON output must be a JSON object (e.g., {})!")
            return state
        is_json = True
    except ValueError:
        idx = out.rstrip().rfind("\n")
        last = out[idx + 1:] if idx != -1 else out
        data = {}
        try:
            for item in shlex.split(last):
                key, val = item.split("=")
                data[key] = val
        except ValueError:
            state.update(result=False,
                         comment="Failed parsing script output! Stdout must be JSON or a line of name=value pairs.")
            state["changes"].update(output)
            return state
    try:
        changed = _is_true(data.get("changed", "no"))
    except ValueError as exc:
        state.update(result=False, comment=str(exc))
        return state
    if "comment" in data:
        state["comment"] = data.pop("comment")
    if changed:
        for key, value in output.items():
            data.setdefault(key, value)
        data["stdout"] = "" if is_json else (data.get("stdout", "")[:idx] if idx != -1 else "")
        state["changes"] = data
    return state


def _stateful(stateful: Any) -> tuple[bool, str | None]:
    if isinstance(stateful, list):
        first = stateful[0] if stateful and isinstance(stateful[0], Mapping) else {}
        return True, first.get("test_name")
    return stateful is True, None


def _env_with_path(env: Any, prepend_path: Any) -> Any:
    if not prepend_path:
        return env
    merged: dict[str, Any] = {}
    if isinstance(env, Mapping):
        merged.update(env)
    elif isinstance(env, list):
        for entry in env:
            if isinstance(entry, Mapping):
                merged.update(entry)
    path = str(merged.get("PATH", os.environ.get("PATH", "")))
    merged["PATH"] = f"{prepend_path}:{path}" if path else str(prepend_path)
    return merged


def _apply_success(result: cmdrun.CommandResult, success_stdout: Any, success_stderr: Any) -> None:
    def as_list(value: Any) -> list[str]:
        if value is None:
            return []
        return [str(v) for v in (value if isinstance(value, list) else [value])]

    if any(s in result.stdout for s in as_list(success_stdout)) or any(
            s in result.stderr for s in as_list(success_stderr)):
        result.retcode = 0


def run(
    ctx: StateContext,
    name: str,
    cwd: str | None = None,
    root: str | None = None,
    runas: Any = None,
    shell: str | None = None,
    env: Any = None,
    prepend_path: Any = None,
    stateful: Any = False,
    timeout: Any = None,
    ignore_timeout: bool = False,
    umask: Any = None,
    success_retcodes: Any = None,
    success_stdout: Any = None,
    success_stderr: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run ``name`` through the shell (result: exit status 0; changes pid/retcode/stdout/stderr)."""
    ret = _ret(name)
    is_stateful, test_name = _stateful(stateful)
    command = test_name if ctx.test and test_name else name
    if env is not None and not isinstance(env, (list, dict)):
        ret["comment"] = "Invalidly-formatted 'env' parameter. See documentation."
        return ret
    if root:
        ret["comment"] = "cmd.run with 'root' (chroot) is not supported by saltpan"
        return ret
    opts = {"cwd": cwd, "runas": runas, "env": env, "umask": umask, "timeout": timeout,
            "success_retcodes": success_retcodes, "shell": shell}
    skipped = _conditions(ctx, kwargs, opts)
    if skipped is not None:
        return {"name": name, **skipped}
    if ctx.test and not test_name:
        ret.update(result=None, comment=f'Command "{name}" would have been executed', changes={"cmd": name})
        return _reinterpreted(ret) if is_stateful else ret
    if cwd and not os.path.isdir(cwd):
        ret["comment"] = f'Desired working directory "{cwd}" is not available'
        return ret
    try:
        result = cmdrun.run(command, cwd=cwd, env=_env_with_path(env, prepend_path), runas=runas,
                            shell=shell, timeout=timeout, umask=umask, success_retcodes=success_retcodes,
                            grains=ctx.grains)
    except cmdrun.CommandError as exc:
        ret["comment"] = str(exc)
        return ret
    _apply_success(result, success_stdout, success_stderr)
    ret["changes"] = result.as_dict()
    ret["result"] = result.retcode == 0
    ret["comment"] = f'Command "{command}" run'
    if ignore_timeout and result.retcode == 1 and "Timed out after" in result.stdout:
        ret["changes"]["retcode"] = 0
        ret["result"] = True
    if is_stateful:
        ret = _reinterpreted(ret)
    if ctx.test and result.retcode == 0 and ret["changes"]:
        ret["result"] = None
    return ret


def wait(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Do nothing; the command runs only through ``mod_watch`` when a watched state changed."""
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def wait_script(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Do nothing; the script runs only through ``mod_watch`` when a watched state changed."""
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def _stage_script(ctx: StateContext, source: str, template: Any, variables: Mapping[str, Any],
                  runas: Any) -> tuple[str, str]:
    """Write the (rendered) script into a private temp dir; returns (dir, path)."""
    from runtime.states import _source as S

    got = S.fetch(ctx, source)
    if got is None:
        raise S.SourceError(f"Unable to cache script {source} from saltenv '{ctx.saltenv}'")
    data = got.data
    if template:
        data = S.render(ctx, data.decode("utf-8"), template, variables, None, source).encode()
    workdir = tempfile.mkdtemp(prefix="saltpan-script-")
    path = os.path.join(workdir, os.path.basename(source.split("?")[0]) or "script")
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, 0o700)
    if runas not in (None, ""):
        try:
            entry = pwd.getpwnam(str(runas))
        except KeyError:
            shutil.rmtree(workdir, ignore_errors=True)
            raise cmdrun.CommandError(f"User '{runas}' is not available") from None
        os.chown(workdir, entry.pw_uid, entry.pw_gid)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return workdir, path


def script(
    ctx: StateContext,
    name: str,
    source: str | None = None,
    template: Any = None,
    cwd: str | None = None,
    runas: Any = None,
    shell: str | None = None,
    env: Any = None,
    stateful: Any = False,
    timeout: Any = None,
    args: Any = None,
    defaults: Any = None,
    context: Any = None,
    success_retcodes: Any = None,
    success_stdout: Any = None,
    success_stderr: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Fetch a script (``salt://``, a path or a URL), optionally render it, and run it with ``args``."""
    from runtime.states import _source as S

    is_stateful, test_name = _stateful(stateful)
    ret = _ret(test_name if ctx.test and test_name else name)
    if env is not None and not isinstance(env, (list, dict)):
        ret["comment"] = "Invalidly-formatted 'env' parameter. See documentation."
        return ret
    if context and not isinstance(context, Mapping):
        ret["comment"] = "Invalidly-formatted 'context' parameter. Must be formed as a dict."
        return ret
    if defaults and not isinstance(defaults, Mapping):
        ret["comment"] = "Invalidly-formatted 'defaults' parameter. Must be formed as a dict."
        return ret
    opts = {"cwd": cwd, "runas": runas, "env": env, "timeout": timeout, "shell": shell}
    skipped = _conditions(ctx, kwargs, opts)
    if skipped is not None:
        return {"name": name, **skipped}
    parts = str(name).split(" ", 1)
    if source is None:
        source = parts[0]
    if not args and len(parts) > 1:
        args = parts[1]
    if ctx.test and not test_name:
        ret.update(result=None, comment=f"Command '{name}' would have been executed")
        return _reinterpreted(ret) if is_stateful else ret
    if cwd and not os.path.isdir(cwd):
        ret["comment"] = f'Desired working directory "{cwd}" is not available'
        return ret
    variables = dict(defaults or {})
    variables.update(context or {})
    workdir = None
    try:
        workdir, path = _stage_script(ctx, str(source), template, variables, runas)
        command = shlex.quote(path) + (f" {args}" if args else "")
        result = cmdrun.run(command, cwd=cwd, env=env, runas=runas, shell=shell, timeout=timeout,
                            success_retcodes=success_retcodes, grains=ctx.grains)
    except (S.SourceError, cmdrun.CommandError, OSError) as exc:
        ret["comment"] = str(exc)
        return ret
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    _apply_success(result, success_stdout, success_stderr)
    ret["changes"] = result.as_dict()
    ret["result"] = result.retcode == 0
    ret["comment"] = f"Command '{name}' run"
    if is_stateful:
        ret = _reinterpreted(ret)
    if ctx.test and result.retcode == 0 and ret["changes"]:
        ret["result"] = None
    return ret


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run the command (``run``/``wait``) or script (``script``/``wait_script``) of a watching state."""
    if sfun in ("wait", "run", "watch"):
        return run(ctx, name, **kwargs)
    if sfun in ("wait_script", "script"):
        return script(ctx, name, **kwargs)
    return {
        "name": name,
        "changes": {},
        "comment": f"cmd.{sfun} does not work with the watch requisite, please use cmd.wait or cmd.wait_script",
        "result": False,
    }
