"""The ``service`` state module: systemd units (running / dead / enabled / disabled) via systemctl.

Where systemd is not the running init system (containers, chroots) every function fails
with a clear comment instead of guessing; nothing is started or changed.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["dead", "disabled", "enabled", "mod_watch", "running"]

SYSTEMD_MARKER = "/run/systemd/system"


def _no_init(name: str, fun: str) -> str | None:
    """Why services cannot be managed here, or None when systemd runs."""
    if not os.path.isdir(SYSTEMD_MARKER):
        return (f"No init system: systemd is not running on this host ({SYSTEMD_MARKER} is missing), "
                f"so service.{fun} cannot manage '{name}'")
    if shutil.which("systemctl") is None:
        return f"No init system: systemctl is not installed, so service.{fun} cannot manage '{name}'"
    return None


def _unit(name: str) -> str:
    return name if "." in name else f"{name}.service"


def _systemctl(*args: str) -> cmdrun.CommandResult:
    return cmdrun.run(["systemctl", *args], cwd="/", timeout=120)


def _available(name: str) -> bool:
    res = _systemctl("show", "--property=LoadState", "--value", _unit(name))
    return res.retcode == 0 and res.stdout.strip() not in ("not-found", "")


def _active(name: str) -> bool:
    return _systemctl("is-active", "--quiet", _unit(name)).retcode == 0


def _enabled(name: str) -> bool:
    res = _systemctl("is-enabled", _unit(name))
    return res.stdout.strip() in ("enabled", "enabled-runtime", "alias", "static", "indirect", "generated")


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def _toggle_boot(ctx: StateContext, ret: dict[str, Any], name: str, enable: bool | None) -> None:
    """Apply ``enable: True/False`` on top of a running/dead result."""
    if enable is None:
        return
    if _enabled(name) == enable:
        ret["comment"] += f"\nService {name} is already {'enabled' if enable else 'disabled'}"
        return
    if ctx.test:
        ret["result"] = None
        ret["changes"][name] = True
        ret["comment"] += f"\nService {name} set to be {'enabled' if enable else 'disabled'}"
        return
    res = _systemctl("enable" if enable else "disable", _unit(name))
    if res.retcode != 0:
        ret["result"] = False
        ret["comment"] += f"\nFailed to {'enable' if enable else 'disable'} {name}: {res.stderr}"
        return
    ret["changes"][name] = True
    ret["comment"] += f"\nService {name} has been {'enabled' if enable else 'disabled'}"


def _bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).lower() in ("true", "yes", "1", "on")


def running(ctx: StateContext, name: str, enable: Any = None, init_delay: Any = None,
            **kwargs: Any) -> dict[str, Any]:
    """Make sure the service is running (and enabled/disabled at boot with ``enable``)."""
    ret = _ret(name)
    problem = _no_init(name, "running")
    if problem:
        ret.update(result=False, comment=problem)
        return ret
    if not _available(name):
        if ctx.test:
            ret.update(result=None, comment=f"Service {name} not present; if created in this state run, "
                                            "it would have been started")
        else:
            ret.update(result=False, comment=f"The named service {name} is not available")
        return ret
    enable_b = _bool(enable)
    if _active(name):
        ret["comment"] = f"The service {name} is already running"
    elif ctx.test:
        ret.update(result=None, comment=f"Service {name} is set to start", changes={name: True})
    else:
        res = _systemctl("start", _unit(name))
        if init_delay:
            import time

            time.sleep(float(init_delay))
        if res.retcode != 0 or not _active(name):
            ret.update(result=False, comment=f"Service {name} failed to start\n{res.stderr}".rstrip())
        else:
            ret.update(comment=f"Started service {name}", changes={name: True})
    if ret["result"] is not False:
        _toggle_boot(ctx, ret, name, enable_b)
    return ret


def dead(ctx: StateContext, name: str, enable: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service is stopped (and enabled/disabled at boot with ``enable``)."""
    ret = _ret(name)
    problem = _no_init(name, "dead")
    if problem:
        ret.update(result=False, comment=problem)
        return ret
    if not _available(name):
        ret["comment"] = f"The named service {name} is not available"
        if ctx.test:
            ret["result"] = None
        return ret
    if not _active(name):
        ret["comment"] = f"The service {name} is already dead"
    elif ctx.test:
        ret.update(result=None, comment=f"Service {name} is set to be killed", changes={name: True})
    else:
        res = _systemctl("stop", _unit(name))
        if res.retcode != 0 or _active(name):
            ret.update(result=False, comment=f"Service {name} failed to die\n{res.stderr}".rstrip())
        else:
            ret.update(comment=f"Service {name} was killed", changes={name: True})
    if ret["result"] is not False:
        _toggle_boot(ctx, ret, name, _bool(enable))
    return ret


def _boot(ctx: StateContext, name: str, fun: str, want: bool) -> dict[str, Any]:
    ret = _ret(name)
    problem = _no_init(name, fun)
    if problem:
        ret.update(result=False, comment=problem)
        return ret
    if not _available(name):
        ret.update(result=False if not ctx.test else None,
                   comment=f"The named service {name} is not available")
        return ret
    word = "enabled" if want else "disabled"
    if _enabled(name) == want:
        ret["comment"] = f"Service {name} is already {word}, and is in the desired state"
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Service {name} set to be {word}", changes={name: True})
        return ret
    res = _systemctl("enable" if want else "disable", _unit(name))
    if res.retcode != 0:
        ret.update(result=False, comment=f"Failed when setting service {name} to "
                                         f"{'start' if want else 'not start'} at boot: {res.stderr}")
        return ret
    ret.update(comment=f"Service {name} has been {word}, and is in the desired state", changes={name: True})
    return ret


def enabled(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service starts at boot (its current state is left alone)."""
    return _boot(ctx, name, "enabled", True)


def disabled(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service does not start at boot (its current state is left alone)."""
    return _boot(ctx, name, "disabled", False)


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, reload: Any = False,
              full_restart: Any = False, force: Any = False, **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: restart (or reload) a running service, stop a dead one."""
    ret = _ret(name)
    problem = _no_init(name, sfun or "mod_watch")
    if problem:
        ret.update(result=False, comment=problem)
        return ret
    active = _active(name)
    if sfun == "dead":
        if not active:
            ret["comment"] = f"Service {name} is already stopped"
            return ret
        action, verb = "stop", "stopped"
    elif sfun == "running":
        if not active:
            action, verb = "start", "started"
        elif _bool(reload):
            action, verb = ("force-reload", "forcefully reloaded") if _bool(force) else ("reload", "reloaded")
        else:
            action, verb = "restart", "restarted"
    else:
        ret.update(result=False, comment=f"Unable to trigger watch for service.{sfun}")
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Service is set to be {verb}", changes={name: True})
        return ret
    res = _systemctl(action, _unit(name))
    if res.retcode != 0:
        ret.update(result=False, comment=f"Service {name} failed to be {verb}: {res.stderr}")
        return ret
    ret.update(comment=f"Service {verb}", changes={name: _active(name)})
    return ret
