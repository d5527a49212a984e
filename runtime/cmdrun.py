"""Run a command the way Salt's ``cmd.run_all`` does, and evaluate ``unless``/``onlyif``/``creates``.

Shared by the ``cmd`` states, the execution modules and the executor (which evaluates the
global ``unless``/``onlyif``/``creates`` arguments for every state, as Salt does).

``run`` behaves like Salt's ``cmd.run_all``:

* a string command runs through a shell (``shell -c cmd``; the shell is the ``shell``
  argument, else the ``shell`` grain, else ``$SHELL``, else ``/bin/sh``); a list runs directly;
* ``cwd`` defaults to the home directory of ``runas`` (or of the current user);
* ``env`` (a dict, or a list of one-key dicts) is laid over the current environment;
* ``runas`` switches user in the child (root only; uid, gid, supplementary groups, HOME,
  USER, LOGNAME and SHELL of that user);
* stdout/stderr are decoded as UTF-8 (undecodable bytes replaced) and stripped of trailing
  whitespace;
* on ``timeout`` the whole process group is killed and the result is retcode 1 with stdout
  ``"<cmd> : Timed out after N seconds"``, as Salt reports it.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CommandError",
    "CommandResult",
    "ConditionOutcome",
    "CHECK_KEYS",
    "check_options",
    "evaluate_conditions",
    "run",
]

CHECK_KEYS = ("onlyif", "unless", "creates")
# Arguments of a state that Salt forwards to the unless/onlyif commands.
_CHECK_CMD_ARGS = ("cwd", "runas", "env", "umask", "timeout", "success_retcodes")


class CommandError(Exception):
    """A command could not be started (bad cwd, unknown runas user, not root, ...)."""


@dataclass
class CommandResult:
    pid: int
    retcode: int
    stdout: str
    stderr: str

    def as_dict(self) -> dict[str, Any]:
        """Salt's ``cmd.run_all`` shape (the changes of a ``cmd.run`` state)."""
        return {"pid": self.pid, "retcode": self.retcode, "stdout": self.stdout, "stderr": self.stderr}


def default_shell(grains: Mapping[str, Any] | None = None) -> str:
    shell = (grains or {}).get("shell")
    return str(shell) if shell else os.environ.get("SHELL") or "/bin/sh"


def _env_dict(env: Any) -> dict[str, str]:
    if env is None or env == ():
        return {}
    if isinstance(env, Mapping):
        items = env.items()
    elif isinstance(env, list):
        merged: dict[str, Any] = {}
        for entry in env:
            if not isinstance(entry, Mapping):
                raise CommandError(f"env entries must be key: value mappings, got {entry!r}")
            merged.update(entry)
        items = merged.items()
    else:
        raise CommandError("Invalidly-formatted 'env' parameter: use a mapping or a list of mappings")
    return {str(k): "" if v is None else _env_value(v) for k, v in items}


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _user_entry(runas: str | int) -> pwd.struct_passwd:
    try:
        if isinstance(runas, int) or (isinstance(runas, str) and runas.isdigit()):
            return pwd.getpwuid(int(runas))
        return pwd.getpwnam(str(runas))
    except KeyError:
        raise CommandError(f"User '{runas}' is not available") from None


def _umask(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(str(value), 8)
    except ValueError:
        raise CommandError(f"Invalid umask: '{value}'") from None


def run(
    cmd: str | Sequence[str],
    *,
    cwd: str | None = None,
    env: Any = None,
    runas: str | int | None = None,
    shell: str | None = None,
    timeout: float | int | None = None,
    umask: Any = None,
    stdin: str | None = None,
    success_retcodes: Any = None,
    grains: Mapping[str, Any] | None = None,
) -> CommandResult:
    """Run ``cmd`` and return pid, retcode, stdout and stderr (see the module doc)."""
    if isinstance(cmd, str):
        argv = [shell or default_shell(grains), "-c", cmd]
        display = cmd
    else:
        argv = [str(part) for part in cmd]
        display = " ".join(argv)
    child_env = dict(os.environ)
    popen_user: dict[str, Any] = {}
    if runas not in (None, ""):
        entry = _user_entry(runas)
        if entry.pw_uid != os.geteuid():
            if os.geteuid() != 0:
                raise CommandError(f"runas '{runas}' needs root: saltpan runs as uid {os.geteuid()}")
            popen_user = {
                "user": entry.pw_uid,
                "group": entry.pw_gid,
                "extra_groups": os.getgrouplist(entry.pw_name, entry.pw_gid),
            }
        child_env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name,
                         SHELL=entry.pw_shell or "/bin/sh")
        home = entry.pw_dir
    else:
        home = os.path.expanduser("~")
    child_env.update(_env_dict(env))
    if cwd in (None, ""):
        cwd = home if os.path.isdir(home) else "/"
    elif not os.path.isdir(cwd):
        raise CommandError(f'Desired working directory "{cwd}" is not available')
    mask = _umask(umask)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=child_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            umask=-1 if mask is None else mask,
            **popen_user,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CommandError(f"Unable to run command '{display}': {exc}") from exc
    limit = float(timeout) if timeout not in (None, "", 0) else None
    try:
        out, err = proc.communicate(input=stdin.encode() if stdin is not None else None, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return CommandResult(proc.pid, 1, f"{display} : Timed out after {_num(timeout)} seconds", "")
    retcode = proc.returncode  # negative when killed by a signal, as in Salt
    if success_retcodes is not None and retcode in _int_list(success_retcodes):
        retcode = 0
    return CommandResult(proc.pid, retcode, _decode(out), _decode(err))


def _int_list(value: Any) -> list[int]:
    values = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in values:
        try:
            out.append(int(item))
        except (TypeError, ValueError):
            continue
    return out


def _num(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace").rstrip()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


# ---------------------------------------------------------------------------
# unless / onlyif / creates


@dataclass
class ConditionOutcome:
    """Result of evaluating a state's ``onlyif``/``unless``/``creates``.

    ``skip`` is True when the state must not run; the executor then returns
    ``{"result": True, "changes": {}, "comment": comment}`` for it (Salt's shape).
    ``skip_watch`` mirrors Salt: a skipped state does not fire ``mod_watch`` either.
    """

    skip: bool
    comment: str
    skip_watch: bool = False


def check_options(args: Mapping[str, Any], grains: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The arguments Salt forwards from a state to its unless/onlyif commands."""
    opts = {key: args.get(key) for key in _CHECK_CMD_ARGS}
    exclude = args.get("cmd_opts_exclude") or []
    if not isinstance(exclude, list):
        exclude = [exclude]
    for key in exclude:
        opts.pop(key, None)
    if "shell" in args and "shell" not in exclude:
        opts["shell"] = args["shell"]
    else:
        opts["shell"] = default_shell(grains)
    return opts


FunctionTable = Mapping[str, Callable[..., Any]]


def _check_retcode(command: str, opts: Mapping[str, Any], grains: Mapping[str, Any] | None) -> int | None:
    """Exit status of one condition command, or None when it could not be started."""
    try:
        return run(command, grains=grains, **opts).retcode
    except CommandError:
        return None


def _call_function(entry: Mapping[str, Any], functions: FunctionTable | None) -> Any:
    entry = dict(entry)
    fun = entry.pop("fun")
    args = entry.pop("args", [])
    get_return = entry.pop("get_return", None)
    if not functions or fun not in functions:
        raise CommandError(f"Function '{fun}' used in a condition is not available")
    if not isinstance(args, list):
        args = [args]
    result = functions[fun](*args, **entry)
    if get_return:
        for part in str(get_return).split(":"):
            if isinstance(result, Mapping):
                result = result.get(part)
            elif isinstance(result, list) and part.isdigit() and int(part) < len(result):
                result = result[int(part)]
            else:
                result = None
                break
    return result


def _onlyif(entries: list, opts: Mapping[str, Any], grains: Mapping[str, Any] | None,
            functions: FunctionTable | None) -> ConditionOutcome:
    """Salt: every entry must succeed for the state to run."""
    comment = "onlyif condition is true"
    for entry in entries:
        if isinstance(entry, str):
            code = _check_retcode(entry, opts, grains)
            if code != 0:
                return ConditionOutcome(True, "onlyif condition is false", True)
        elif isinstance(entry, Mapping):
            if "fun" not in entry:
                return ConditionOutcome(False, f"no `fun` argument in onlyif: {dict(entry)}")
            try:
                ok = _call_function(entry, functions)
            except Exception as exc:  # noqa: BLE001 - a failing check function means "false"
                return ConditionOutcome(True, f"onlyif condition is false ({exc})", True)
            if not ok:
                return ConditionOutcome(True, "onlyif condition is false", True)
        else:
            return ConditionOutcome(False, "onlyif execution failed, bad type passed")
    return ConditionOutcome(False, comment)


def _unless(entries: list, opts: Mapping[str, Any], grains: Mapping[str, Any] | None,
            functions: FunctionTable | None) -> ConditionOutcome:
    """Salt: the state runs as soon as one entry fails; skipped when all succeed."""
    outcome = ConditionOutcome(False, "unless condition is false")
    for entry in entries:
        if isinstance(entry, str):
            code = _check_retcode(entry, opts, grains)
            if code is None:  # Salt treats a command that cannot run as "true"
                code = 0
            if code != 0:
                return ConditionOutcome(False, "unless condition is false")
            outcome = ConditionOutcome(True, "unless condition is true", True)
        elif isinstance(entry, Mapping):
            if "fun" not in entry:
                return ConditionOutcome(False, f"no `fun` argument in unless: {dict(entry)}")
            try:
                ok = _call_function(entry, functions)
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                return ConditionOutcome(False, "unless condition is false")
            outcome = ConditionOutcome(True, "unless condition is true", True)
        else:
            outcome = ConditionOutcome(False, "unless condition is false, bad type passed")
    return outcome


def _creates(value: Any) -> ConditionOutcome:
    if isinstance(value, str) and os.path.exists(value):
        return ConditionOutcome(True, f"{value} exists", True)
    if isinstance(value, list) and all(os.path.exists(str(p)) for p in value):
        return ConditionOutcome(True, "All files in creates exist", True)
    return ConditionOutcome(False, "Creates files not found")


def evaluate_conditions(
    args: Mapping[str, Any],
    grains: Mapping[str, Any] | None = None,
    functions: FunctionTable | None = None,
) -> ConditionOutcome | None:
    """Evaluate ``onlyif``, ``unless`` and ``creates`` of one state (Salt's ``_run_check``).

    Returns None when the state has none of them. The state is skipped when any of the
    three says so (onlyif false, unless true, creates all present). Commands run with the
    state's cwd/runas/env/umask/timeout/shell, as in Salt.
    """
    present = [key for key in CHECK_KEYS if key in args]
    if not present:
        return None
    opts = check_options(args, grains)
    outcomes: list[ConditionOutcome] = []
    if "onlyif" in args:
        value = args["onlyif"]
        outcomes.append(_onlyif(value if isinstance(value, list) else [value], opts, grains, functions))
    if "unless" in args:
        value = args["unless"]
        outcomes.append(_unless(value if isinstance(value, list) else [value], opts, grains, functions))
    if "creates" in args:
        outcomes.append(_creates(args["creates"]))
    skip = any(o.skip for o in outcomes)
    return ConditionOutcome(
        skip=skip,
        comment="\n".join(o.comment for o in outcomes),
        skip_watch=any(o.skip_watch for o in outcomes),
    )
