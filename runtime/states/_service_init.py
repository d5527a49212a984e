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

from runtime import cmdrun

SYSTEMD_MARKER = "/run/systemd/system"
INIT_D = "/etc/init.d"
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


class Systemctl:
    """Unit files and, when systemd runs (``booted``), units themselves."""

    def __init__(self, booted: bool):
        self.booted = booted

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
