"""The init systems the ``service`` states drive: systemd through systemctl, and SysV init scripts.

Which one manages what depends on the host, as with Salt 3008 on Debian:

* systemd is the running init (``/run/systemd/system`` exists): systemctl for everything.
* systemd is installed but not running (a container, a chroot, an image build): Salt's
  "offline" mode. ``systemctl`` still edits unit-file links (enable, disable, mask, unmask) but
  cannot start or stop anything; starting and stopping for a ``watch`` go through the SysV
  init script (``service NAME start``), as Salt's ``debian_service`` does there.
* no systemctl at all: SysV init scripts and ``update-rc.d`` for everything.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any

from runtime import cmdrun

SYSTEMD_MARKER = "/run/systemd/system"
INIT_D = "/etc/init.d"
# where unit files live (Salt's SYSTEM_CONFIG_PATHS and LOCAL_CONFIG_PATH)
UNIT_DIRS = ("/lib/systemd/system", "/usr/lib/systemd/system", "/etc/systemd/system")
UNIT_TYPES = ("service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer")
# `systemctl is-enabled` answers that mean "starts at boot" (static units start when wanted)
_ENABLED_STATES = ("enabled", "enabled-runtime", "alias", "static", "indirect", "generated")


def systemd_booted() -> bool:
    return os.path.isdir(SYSTEMD_MARKER)


def offline() -> bool:
    """Salt's ``service.offline``: systemctl is installed but systemd is not the running init."""
    return not systemd_booted() and shutil.which("systemctl") is not None


def _run(args: list[str]) -> cmdrun.CommandResult:
    return cmdrun.run(args, cwd="/", timeout=120)


def unit(name: str) -> str:
    return name if re.search(r"\.(service|socket|device|mount|automount|swap|target|path|timer|slice|scope)$",
                             name) else f"{name}.service"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    error: str = ""


def _outcome(res: cmdrun.CommandResult) -> Outcome:
    return Outcome(res.retcode == 0, (res.stderr or res.stdout).strip())


def short_unit(fullname: str) -> str | None:
    """A unit file name as Salt lists it: ``cron`` for ``cron.service``, ``x.timer`` for a timer;
    None for a name that is not a unit."""
    unit_name, dot, unit_type = fullname.rpartition(".")
    if not dot or unit_type not in UNIT_TYPES:
        return None
    return unit_name if unit_type == "service" else fullname


class Systemctl:
    """Unit files and, when systemd runs (``booted``), units themselves."""

    def __init__(self, booted: bool):
        self.booted = booted

    @staticmethod
    def unit_files() -> set[str]:
        """Every unit file of the unit directories, named as :func:`short_unit` does."""
        out: set[str] = set()
        for path in UNIT_DIRS:
            if os.access(path, os.R_OK) and not os.path.islink(path):
                for fullname in os.listdir(path):
                    name = short_unit(fullname)
                    if name is not None:
                        out.add(name)
        return out

    @staticmethod
    def unit_file_states(state: str) -> set[str]:
        """Units whose ``systemctl list-unit-files`` state is ``state`` (enabled, disabled, static)."""
        res = _run(["systemctl", "--full", "--no-legend", "--no-pager", "list-unit-files"])
        out: set[str] = set()
        for line in res.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[1] == state:
                name = short_unit(fields[0])
                if name is not None:
                    out.add(name)
        return out

    @staticmethod
    def running_units() -> set[str]:
        """Units systemd reports running (none when systemd is not the running init)."""
        res = _run(["systemctl", "--full", "--no-legend", "--no-pager"])
        out: set[str] = set()
        for line in res.stdout.splitlines():
            fields = line.split()
            if len(fields) > 3 and fields[3] == "running":
                name = short_unit(fields[0])
                if name is not None:
                    out.add(name)
        return out

    @staticmethod
    def show(name: str) -> dict[str, Any]:
        """``systemctl show`` as Salt parses it: key=value lines; ``{a=b ; c=d}`` values as mappings;
        Before/After/Wants as lists."""
        res = _run(["systemctl", "show", unit(name)])
        out: dict[str, Any] = {}
        for line in [*res.stdout.splitlines(), *res.stderr.splitlines()]:
            if not line:
                continue
            key, _, value = line.partition("=")
            if value.startswith("{"):
                fields: dict[str, str] = {}
                for item in value.replace("{", "").replace("}", "").split(" ; "):
                    field_key, _, field_value = item.partition("=")
                    fields[field_key.strip()] = field_value.strip()
                out[key] = fields
            elif key in ("Before", "After", "Wants"):
                out[key] = value.split()
            else:
                out[key] = value
        return out

    @staticmethod
    def daemon_reload() -> Outcome:
        return _outcome(_run(["systemctl", "--system", "daemon-reload"]))

    def available(self, name: str) -> bool:
        if self.booted:
            res = _run(["systemctl", "show", "--property=LoadState", "--value", unit(name)])
            return res.retcode == 0 and res.stdout.strip() not in ("not-found", "")
        # offline: systemctl reads unit files (and SysV scripts) without PID 1
        res = _run(["systemctl", "is-enabled", unit(name)])
        state = res.stdout.strip()
        return bool(state) and state != "not-found"

    def active(self, name: str) -> bool:
        return _run(["systemctl", "is-active", "--quiet", unit(name)]).retcode == 0

    def action(self, name: str, verb: str) -> Outcome:
        return _outcome(_run(["systemctl", verb, unit(name)]))

    def enabled(self, name: str) -> bool:
        return _run(["systemctl", "is-enabled", unit(name)]).stdout.strip() in _ENABLED_STATES

    def set_boot(self, name: str, enable: bool) -> Outcome:
        return _outcome(_run(["systemctl", "enable" if enable else "disable", unit(name)]))

    @staticmethod
    def masked(name: str, runtime: bool) -> bool:
        base = "/run" if runtime else "/etc"
        try:
            return os.readlink(os.path.join(base, "systemd", "system", unit(name))) == "/dev/null"
        except OSError:
            return False

    @staticmethod
    def set_mask(name: str, runtime: bool, mask: bool) -> Outcome:
        args = ["systemctl", "mask" if mask else "unmask"] + (["--runtime"] if runtime else []) + [unit(name)]
        return _outcome(_run(args))


class SysV:
    """Init scripts in /etc/init.d, run through ``service`` (or directly); boot links in /etc/rc?.d."""

    @staticmethod
    def scripts(executable_only: bool = False) -> list[str]:
        """The init scripts (README left out)."""
        try:
            names = os.listdir(INIT_D)
        except OSError:
            return []
        return sorted(n for n in names if n != "README" and (
            not executable_only or os.access(os.path.join(INIT_D, n), os.X_OK)))

    def enabled_names(self) -> set[str]:
        """Services started at boot in the current runlevel (an S link in /etc/rc[S<level>].d)."""
        return {re.sub(r"^S\d+", "", os.path.basename(link))
                for link in glob.glob(f"/etc/rc[S{self._runlevel()}].d/S*")}

    def all_names(self) -> set[str]:
        return set(self.scripts()) | self.enabled_names()

    @staticmethod
    def _script(name: str) -> str:
        return os.path.join(INIT_D, name)

    def available(self, name: str) -> bool:
        return os.path.isfile(self._script(name)) or self.enabled(name)

    def _command(self, name: str, verb: str) -> list[str]:
        runner = shutil.which("service")
        return [runner, name, verb] if runner else [self._script(name), verb]

    def active(self, name: str) -> bool:
        try:
            return _run(self._command(name, "status")).retcode == 0
        except cmdrun.CommandError:
            return False

    def action(self, name: str, verb: str) -> Outcome:
        try:
            return _outcome(_run(self._command(name, verb)))
        except cmdrun.CommandError as exc:
            return Outcome(False, str(exc))

    @staticmethod
    def _runlevel() -> str:
        # Salt assumes Debian's default runlevel 2 where `runlevel` says "unknown" (containers)
        try:
            out = _run(["runlevel"]).stdout.split()
        except cmdrun.CommandError:
            return "2"
        return out[1] if len(out) == 2 and out[1].isdigit() else "2"

    def enabled(self, name: str) -> bool:
        for link in glob.glob(f"/etc/rc[S{self._runlevel()}].d/S*"):
            if re.sub(r"^S\d+", "", os.path.basename(link)) == name:
                return True
        return False

    def set_boot(self, name: str, enable: bool) -> Outcome:
        if shutil.which("update-rc.d") is None:
            return Outcome(False, "update-rc.d is not installed")
        if enable:
            res = _run(["update-rc.d", name, "defaults"])
            if res.retcode != 0:
                return _outcome(res)
        return _outcome(_run(["update-rc.d", name, "enable" if enable else "disable"]))
