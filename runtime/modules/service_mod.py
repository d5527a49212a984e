"""service: start, stop, restart, reload and query services; enable and disable them at boot.

The init system is the host's, decided by the same code as the ``service`` states
(``runtime/states/_service_init.py``), with the answers of Salt 3008's modules there:

* systemd is the running init: Salt's ``systemd_service`` (systemctl for everything; a failed
  start/stop/restart/reload raises the command's error).
* otherwise (containers, chroots, SysV hosts): Salt's ``debian_service`` for what it has (init
  scripts through ``service NAME VERB``, boot links in ``/etc/rc?.d``, results as booleans), and
  ``systemd_service`` for the rest where systemctl is installed (``mask``, ``masked``, ``show``,
  ``offline`` ...: systemctl edits unit files without PID 1, "offline mode").

Two answers differ from Salt's there, on purpose (docs/functions.md): ``enable`` runs
``update-rc.d NAME defaults`` then ``enable`` (Salt runs ``insserv``, which Debian 12 no longer
ships, so Salt's always fails), and boot-link names are read whole (Salt lists ``x11-common``
as ``-common``).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host, runs_command
from runtime.states import _service_init as init

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

_GLOB = re.compile(r"\*|\?|\[.+\]")


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _systemd() -> bool:
    return init.systemd_booted()


def _systemctl() -> init.Systemctl:
    if shutil.which("systemctl") is None:
        raise _error("systemctl is not installed on this minion")
    return init.Systemctl(booted=_systemd())


def _runner() -> init.Systemctl | init.SysV:
    return init.Systemctl(booted=True) if _systemd() else init.SysV()


def _all() -> list[str]:
    if _systemd():
        units = init.Systemctl.unit_files()
        return sorted(units | {s for s in init.SysV.scripts(executable_only=True) if s not in units})
    return sorted(init.SysV().all_names())


def _enabled_set() -> set[str]:
    sysv = init.SysV()
    if _systemd():
        units = init.Systemctl.unit_files()
        return init.Systemctl.unit_file_states("enabled") | {
            s for s in init.SysV.scripts(executable_only=True) if s not in units and s in sysv.enabled_names()}
    return sysv.enabled_names()


@reads_host(absent=constant([]))
def get_all(env: ModuleEnv, root: str | None = None) -> list[str]:
    """Every service this host has (unit files and init scripts), sorted."""
    return _all()


@reads_host(absent=constant([]))
def get_enabled(env: ModuleEnv, root: str | None = None) -> list[str]:
    """The services started at boot, sorted."""
    return sorted(_enabled_set())


@reads_host(absent=constant([]))
def get_disabled(env: ModuleEnv, root: str | None = None) -> list[str]:
    """The services not started at boot, sorted."""
    if _systemd():
        units = init.Systemctl.unit_files()
        sysv = init.SysV()
        return sorted(init.Systemctl.unit_file_states("disabled") | {
            s for s in init.SysV.scripts(executable_only=True) if s not in units and s not in sysv.enabled_names()})
    return sorted(set(_all()) - _enabled_set())


@reads_host(absent=constant([]))
def get_running(env: ModuleEnv) -> list[str]:
    """The units systemd reports running ([] where systemd is not the running init)."""
    if shutil.which("systemctl") is None:
        return []
    return sorted(init.Systemctl.running_units())


@reads_host(absent=constant([]))
def get_static(env: ModuleEnv, root: str | None = None) -> list[str]:
    """The static units (started only when another unit wants them), sorted."""
    if shutil.which("systemctl") is None:
        return []
    return sorted(init.Systemctl.unit_file_states("static"))


@reads_host(absent=constant(False))
def available(env: ModuleEnv, name: str) -> bool:
    """True when the service exists on this host."""
    if _systemd():
        return init.Systemctl(booted=True).available(str(name))
    return str(name) in _all()


@reads_host(absent=constant(True))
def missing(env: ModuleEnv, name: str) -> bool:
    """True when the service does not exist on this host (the inverse of service.available)."""
    return not available(env, name)


@reads_host(absent=constant(False))
def status(env: ModuleEnv, name: str, sig: str | None = None) -> Any:
    """True when the service is running; with a glob, {service: running} for each match. ``sig``:
    a process pattern to look for instead (Salt's status.pid)."""
    if sig:
        import subprocess

        found = subprocess.run(["pgrep", "-f", str(sig)], capture_output=True, text=True, check=False)
        return bool(found.stdout.strip())
    name = str(name)
    names = fnmatch.filter(_all(), name) if _GLOB.search(name) else [name]
    runner = _runner()
    results = {service: runner.active(service) for service in names}
    return results if _GLOB.search(name) else results[name]


def _act(name: Any, verb: str) -> bool:
    runner = _runner()
    outcome = runner.action(str(name), verb)
    if isinstance(runner, init.Systemctl) and not outcome.ok:
        raise _error(outcome.error)   # systemd_service: the command's error, as Salt raises it
    return outcome.ok


@runs_command()
def start(env: ModuleEnv, name: str, no_block: bool = False, unmask: bool = False,
          unmask_runtime: bool = False) -> bool:
    """Start the service; True when it started."""
    _unmask_first(name, unmask, unmask_runtime)
    return _act(name, "start")


@runs_command()
def stop(env: ModuleEnv, name: str, no_block: bool | None = None) -> bool:
    """Stop the service; True when it stopped."""
    return _act(name, "stop")


@runs_command()
def restart(env: ModuleEnv, name: str, no_block: bool | None = None, unmask: bool = False,
            unmask_runtime: bool = False) -> bool:
    """Restart the service; True when it restarted."""
    _unmask_first(name, unmask, unmask_runtime)
    return _act(name, "restart")


@runs_command(name="reload")
def reload_(env: ModuleEnv, name: str, no_block: bool = False, unmask: bool = False,
            unmask_runtime: bool = False) -> bool:
    """Reload the service's configuration; True when it reloaded."""
    _unmask_first(name, unmask, unmask_runtime)
    return _act(name, "reload")


@runs_command()
def force_reload(env: ModuleEnv, name: str, no_block: bool = True, unmask: bool = False,
                 unmask_runtime: bool = False) -> bool:
    """Force-reload the service; True when it reloaded."""
    _unmask_first(name, unmask, unmask_runtime)
    return _act(name, "force-reload")


def _boot_manager() -> init.Systemctl | init.SysV:
    if _systemd():
        return init.Systemctl(booted=True)
    return init.SysV()


@runs_command()
def enable(env: ModuleEnv, name: str, no_block: bool = False, unmask: bool = False, unmask_runtime: bool = False,
           root: str | None = None, **kwargs: Any) -> bool:
    """Start the service at boot; True when done."""
    _unmask_first(name, unmask, unmask_runtime)
    manager = _boot_manager()
    outcome = manager.set_boot(str(name), True)
    if isinstance(manager, init.Systemctl) and not outcome.ok and str(name) not in init.SysV.scripts():
        raise _error(outcome.error)
    return outcome.ok


@runs_command()
def disable(env: ModuleEnv, name: str, no_block: bool = False, root: str | None = None, **kwargs: Any) -> bool:
    """Do not start the service at boot; True when done."""
    return _boot_manager().set_boot(str(name), False).ok


@reads_host(absent=constant(False))
def enabled(env: ModuleEnv, name: str, root: str | None = None, **kwargs: Any) -> bool:
    """True when the service starts at boot."""
    if _systemd():
        return init.Systemctl(booted=True).enabled(str(name))
    return str(name) in _enabled_set()


@reads_host(absent=constant(True))
def disabled(env: ModuleEnv, name: str, root: str | None = None) -> bool:
    """True when the service exists and does not start at boot (with systemd running: when it does
    not start at boot)."""
    if _systemd():
        return not enabled(env, name)
    return str(name) in set(_all()) - _enabled_set()


# -- systemd's own functions (offline where systemd is installed but not running) ----------------


@reads_host(absent=constant(False))
def offline(env: ModuleEnv) -> Any:
    """Salt's offline mode: the path of systemctl when systemd is installed but not the running init
    (a container, a chroot), else False."""
    return (shutil.which("systemctl") or False) if not _systemd() else False


@reads_host(absent=constant(False))
def masked(env: ModuleEnv, name: str, runtime: bool = False, root: str | None = None) -> bool:
    """True when the unit is masked (``runtime``: masked until the next boot)."""
    return init.Systemctl.masked(str(name), bool(runtime))


@runs_command()
def mask(env: ModuleEnv, name: str, runtime: bool = False, root: str | None = None) -> bool:
    """Mask the unit (``runtime``: until the next boot only): it cannot be started."""
    systemctl = _systemctl()
    if runtime and not systemctl.booted:
        raise _error(f"Cannot mask service {name} for this boot only: systemd is not the running init here "
                     f"(creating {init.SYSTEMD_MARKER} would make the host look as if it were)")
    outcome = init.Systemctl.set_mask(str(name), bool(runtime), True)
    if not outcome.ok:
        raise _error(f"Failed to mask service '{name}': {outcome.error}")
    return True


@runs_command(name="unmask")
def unmask_(env: ModuleEnv, name: str, runtime: bool = False, root: str | None = None) -> bool:
    """Remove the unit's mask (``runtime``: the runtime mask); True also when it was not masked."""
    _systemctl()
    if not init.Systemctl.masked(str(name), bool(runtime)):
        return True
    outcome = init.Systemctl.set_mask(str(name), bool(runtime), False)
    if not outcome.ok:
        raise _error(f"Failed to unmask service '{name}'")
    return True


def _unmask_first(name: Any, unmask: Any, unmask_runtime: Any) -> None:
    if unmask:
        init.Systemctl.set_mask(str(name), False, False)
    if unmask_runtime:
        init.Systemctl.set_mask(str(name), True, False)


@reads_host(absent=constant({}))
def show(env: ModuleEnv, name: str, root: str | None = None) -> dict[str, Any]:
    """The unit's properties from ``systemctl show`` (where systemd is not running, its error lines)."""
    _systemctl()
    return init.Systemctl.show(str(name))


@reads_host(absent=constant({}))
def execs(env: ModuleEnv, root: str | None = None) -> dict[str, str]:
    """{service: the program its ExecStart runs} for every service systemd can show."""
    if shutil.which("systemctl") is None:
        return {}
    out: dict[str, str] = {}
    for service in _all():
        data = init.Systemctl.show(service)
        start_cmd = data.get("ExecStart")
        if isinstance(start_cmd, dict) and start_cmd.get("path"):
            out[service] = start_cmd["path"]
    return out


@runs_command()
def systemctl_reload(env: ModuleEnv) -> bool:
    """``systemctl daemon-reload`` (after unit files changed); an error where systemd is not running."""
    _systemctl()
    outcome = init.Systemctl.daemon_reload()
    if not outcome.ok:
        raise _error(f"Problem performing systemctl daemon-reload: {outcome.error}")
    return True
