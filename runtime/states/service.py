"""The ``service`` state module: running / dead / enabled / disabled / masked / unmasked, and mod_watch.

Which init system does what is decided per host (``_service_init``):

* systemd running: systemctl for everything.
* systemd installed but not running (containers, chroots, image builds): Salt 3008's "offline"
  mode. ``running`` and ``dead`` do nothing and succeed ("Running in OFFLINE mode. Nothing to
  do"); enabling, disabling and masking edit unit-file links through systemctl (which works
  without PID 1); a ``watch`` restarts the service through its SysV init script, if it has one,
  as Salt's ``debian_service`` does there.
* no systemd at all: SysV init scripts (``service NAME start``) and ``update-rc.d``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime.states import _service_init as init

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["dead", "disabled", "enabled", "masked", "mod_watch", "running", "unmasked"]

OFFLINE_COMMENT = "Running in OFFLINE mode. Nothing to do"


def _runner() -> init.Systemctl | init.SysV:
    """What starts and stops services here."""
    return init.Systemctl(booted=True) if init.systemd_booted() else init.SysV()


def _boot_manager() -> init.Systemctl | init.SysV:
    """What enables and disables services at boot here."""
    if init.systemd_booted():
        return init.Systemctl(booted=True)
    return init.Systemctl(booted=False) if init.offline() else init.SysV()


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def _bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "yes", "1", "on")


def _enabled_typo(ret: dict[str, Any], kwargs: dict[str, Any]) -> bool:
    if "enabled" not in kwargs:
        return False
    ret.update(result=False, comment=f'Service {ret["name"]} uses non-existent option "enabled".  '
                                     'Perhaps "enable" option was intended?')
    return True


def _toggle_boot(ctx: StateContext, ret: dict[str, Any], name: str, enable: bool | None) -> None:
    """Apply ``enable: True/False`` on top of a running/dead result."""
    if enable is None:
        return
    manager = _boot_manager()
    word = "enabled" if enable else "disabled"
    if manager.enabled(name) == enable:
        ret["comment"] += f"\nService {name} is already {word}"
        return
    if ctx.test:
        ret["result"] = None
        ret["changes"][name] = True
        ret["comment"] += f"\nService {name} set to be {word}"
        return
    outcome = manager.set_boot(name, enable)
    if not outcome.ok:
        ret["result"] = False
        ret["comment"] += f"\nFailed to {'enable' if enable else 'disable'} {name}: {outcome.error}"
        return
    ret["changes"][name] = True
    ret["comment"] += f"\nService {name} has been {word}"


def running(ctx: StateContext, name: str, enable: Any = None, init_delay: Any = None,
            **kwargs: Any) -> dict[str, Any]:
    """Make sure the service is running (and enabled/disabled at boot with ``enable``)."""
    ret = _ret(name)
    if _enabled_typo(ret, kwargs):
        return ret
    if init.offline():
        ret["comment"] = OFFLINE_COMMENT
        return ret
    runner = _runner()
    if not runner.available(name):
        if ctx.test:
            ret.update(result=None, comment=f"Service {name} not present; if created in this state run, "
                                            "it would have been started")
        else:
            ret.update(result=False, comment=f"The named service {name} is not available")
        return ret
    enable_b = _bool(enable)
    if runner.active(name):
        ret["comment"] = f"The service {name} is already running"
    elif ctx.test:
        ret.update(result=None, comment=f"Service {name} is set to start", changes={name: True})
    else:
        outcome = runner.action(name, "start")
        if init_delay:
            time.sleep(float(init_delay))
        if not outcome.ok or not runner.active(name):
            ret.update(result=False, comment=f"Service {name} failed to start\n{outcome.error}".rstrip())
        else:
            ret.update(comment=f"Started service {name}", changes={name: True})
    if ret["result"] is not False:
        _toggle_boot(ctx, ret, name, enable_b)
    return ret


def dead(ctx: StateContext, name: str, enable: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service is stopped (and enabled/disabled at boot with ``enable``)."""
    ret = _ret(name)
    if _enabled_typo(ret, kwargs):
        return ret
    if init.offline():
        ret["comment"] = OFFLINE_COMMENT
        return ret
    runner = _runner()
    if not runner.available(name):
        ret["comment"] = f"The named service {name} is not available"
        if ctx.test:
            ret["result"] = None
        return ret
    if not runner.active(name):
        ret["comment"] = f"The service {name} is already dead"
    elif ctx.test:
        ret.update(result=None, comment=f"Service {name} is set to be killed", changes={name: True})
    else:
        outcome = runner.action(name, "stop")
        if not outcome.ok or runner.active(name):
            ret.update(result=False, comment=f"Service {name} failed to die\n{outcome.error}".rstrip())
        else:
            ret.update(comment=f"Service {name} was killed", changes={name: True})
    if ret["result"] is not False:
        _toggle_boot(ctx, ret, name, _bool(enable))
    return ret


def _boot(ctx: StateContext, name: str, want: bool) -> dict[str, Any]:
    ret = _ret(name)
    manager = _boot_manager()
    if not manager.available(name):
        if ctx.test and want:
            ret.update(result=None, comment=f"Service {name} not present; if created in this state run, "
                                            "it would have been enabled")
        else:
            # Salt: a service that is not there is as disabled as it gets
            ret.update(result=not want, comment=f"The named service {name} is not available")
        return ret
    word = "enabled" if want else "disabled"
    if manager.enabled(name) == want:
        ret["comment"] = f"Service {name} is already {word}, and is in the desired state"
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Service {name} set to be {word}")
        return ret
    outcome = manager.set_boot(name, want)
    if not outcome.ok:
        ret.update(result=False, comment=f"Failed when setting service {name} to "
                                         f"{'start' if want else 'not start'} at boot: {outcome.error}")
        return ret
    ret.update(comment=f"Service {name} has been {word}, and is in the desired state", changes={name: True})
    return ret


def enabled(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service starts at boot (its current state is left alone)."""
    return _boot(ctx, name, True)


def disabled(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure the service does not start at boot (its current state is left alone)."""
    return _boot(ctx, name, False)


def _mask(ctx: StateContext, name: str, runtime: Any, want: bool) -> dict[str, Any]:
    ret = _ret(name)
    manager = _boot_manager()
    if not isinstance(manager, init.Systemctl):
        ret.update(result=False, comment="Service masking not available on this minion")
        return ret
    is_runtime = bool(_bool(runtime))
    kind = "runtime masked" if is_runtime else "masked"
    action = kind if want else ("runtime unmasked" if is_runtime else "unmasked")
    if is_runtime and not manager.booted:
        # a runtime mask lives in /run/systemd/system, whose mere existence tells every tool
        # (Salt and saltpan included) that systemd is the running init
        ret.update(result=False, comment=f"Cannot {'mask' if want else 'unmask'} service {name} for this boot "
                                         "only: systemd is not the running init here (creating "
                                         f"{init.SYSTEMD_MARKER} would make the host look as if it were)")
        return ret
    if manager.masked(name, is_runtime) == want:
        ret["comment"] = f"Service {name} is already {kind}" if want else f"Service {name} was already {action}"
        return ret
    changes = {kind: {"old": not want, "new": want}}
    if ctx.test:
        ret.update(result=None, changes=changes, comment=f"Service {name} would be {action}")
        return ret
    outcome = manager.set_mask(name, is_runtime, want)
    if not outcome.ok:
        ret.update(result=False, comment=f"Failed to {'mask' if want else 'unmask'} service '{name}': "
                                         f"{outcome.error}")
    elif manager.masked(name, is_runtime) == want:
        ret.update(changes=changes, comment=f"Service {name} was {action}")
    else:
        ret.update(result=False, comment=f"Failed to {'mask' if want else 'unmask'} service {name}")
    return ret


def masked(ctx: StateContext, name: str, runtime: Any = False, **kwargs: Any) -> dict[str, Any]:
    """Make sure the unit is masked (``runtime``: until the next reboot only)."""
    return _mask(ctx, name, runtime, True)


def unmasked(ctx: StateContext, name: str, runtime: Any = False, **kwargs: Any) -> dict[str, Any]:
    """Make sure the unit is not masked (``runtime``: remove the runtime mask only)."""
    return _mask(ctx, name, runtime, False)


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, reload: Any = False,
              full_restart: Any = False, force: Any = False, init_delay: Any = None,
              **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: restart (or reload) a running service, start a stopped one
    (``running``), stop a running one (``dead``)."""
    ret = _ret(name)
    runner = _runner()
    active = runner.active(name)
    if sfun == "dead":
        if not active:
            ret["comment"] = "Service is already stopped"
            return ret
        verb, done = "stop", "stopped"
    elif sfun == "running":
        if not active:
            verb, done = "start", "started"
        elif _bool(reload):
            verb, done = ("force-reload", "forcefully reloaded") if _bool(force) else ("reload", "reloaded")
        else:
            verb, done = "restart", "restarted"
    else:
        ret.update(result=False, comment=f"Unable to trigger watch for service.{sfun}")
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Service is set to be {done}")
        return ret
    if verb == "start":
        runner.action(name, "stop")  # Salt stops a service before starting it here
    outcome = runner.action(name, verb)
    if isinstance(runner, init.Systemctl) and not outcome.ok:
        ret.update(result=False, comment=outcome.error)
        return ret
    if init_delay:
        time.sleep(float(init_delay))
    verb_word = verb.replace("force-reload", "forcefully reload")
    ret.update(result=outcome.ok, changes={name: outcome.ok},
               comment=f"Service {done}" if outcome.ok else f"Failed to {verb_word} the service")
    return ret
