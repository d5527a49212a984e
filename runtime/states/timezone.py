"""The ``timezone`` state module: ``system`` (the system timezone and whether the hardware clock
keeps UTC).

As Salt 3008 on Linux: where ``timedatectl`` is installed it is asked and used (it fails where
systemd is not the running init, e.g. in a container: the state fails with its message, as
Salt's does); elsewhere (Debian) the zone is ``/etc/timezone`` plus the ``/etc/localtime``
symlink into ``/usr/share/zoneinfo``, and the clock is ``UTC=`` of ``/etc/default/rcS`` or the
last line of ``/etc/adjtime``.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["system"]


class TimezoneError(Exception):
    pass


@dataclass(frozen=True)
class Files:
    """Where the file-based method reads and writes (a root other than / in tests)."""

    root: str = "/"

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel.lstrip("/"))


def _timedatectl(*args: str) -> str:
    res = cmdrun.run(["timedatectl", *args], cwd="/")
    if res.retcode != 0:
        raise TimezoneError(f"timedatectl failed: {res.stderr.strip()}")
    return res.stdout


class Timedatectl:
    def zone(self) -> str:
        out = _timedatectl()
        for line in out.splitlines():
            found = re.match(r"\s*Time ?zone:\s+(\S+)", line)
            if found:
                return found.group(1)
        raise TimezoneError(f"Failed to parse timedatectl output: {out}")

    def hwclock(self) -> str:
        for line in _timedatectl().splitlines():
            if "rtc in local tz" in line.lower():
                return "localtime" if line.split(":")[-1].strip().lower() == "yes" else "UTC"
        raise TimezoneError("Failed to parse timedatectl output")

    def set_zone(self, name: str) -> None:
        _timedatectl("set-timezone", name)

    def set_hwclock(self, clock: str) -> None:
        _timedatectl("set-local-rtc", "true" if clock == "localtime" else "false")


class FileMethod:
    def __init__(self, files: Files):
        self.files = files

    def zone(self) -> str:
        try:
            with open(self.files.path("/etc/timezone"), encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError as exc:
            raise TimezoneError(f"Problem reading timezone file /etc/timezone: {exc.strerror}") from None

    def zone_file(self, name: str) -> str:
        return self.files.path(f"/usr/share/zoneinfo/{name}")

    def hwclock(self) -> str:
        try:
            with open(self.files.path("/etc/default/rcS"), encoding="utf-8") as handle:
                for line in handle:
                    if not re.match(r"^\s*#", line) and "UTC=" in line:
                        return "UTC" if line.rstrip("\n").split("=")[-1].lower() == "yes" else "localtime"
        except OSError:
            pass
        try:
            with open(self.files.path("/etc/adjtime"), encoding="utf-8") as handle:
                last = handle.read().splitlines()[-1:]
        except OSError:
            return "UTC"
        return "localtime" if last and last[0].strip() == "LOCAL" else "UTC"

    def set_zone(self, name: str) -> None:
        zonefile = self.zone_file(name)
        if not os.path.exists(zonefile):
            raise TimezoneError(f"Zone does not exist: /usr/share/zoneinfo/{name}")
        localtime = self.files.path("/etc/localtime")
        tmp = f"{localtime}.saltpan-new"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(f"/usr/share/zoneinfo/{name}" if self.files.root == "/" else zonefile, tmp)
        os.replace(tmp, localtime)
        F.atomic_write(self.files.path("/etc/timezone"), f"{name}\n".encode(), 0o644)

    def set_hwclock(self, clock: str) -> None:
        rcs = self.files.path("/etc/default/rcS")
        if os.path.exists(rcs):
            text = F.read_bytes(rcs).decode()
            new = re.sub(r"(?m)^UTC=.*", f"UTC={'yes' if clock == 'UTC' else 'no'}", text)
            if new != text:
                F.write_preserving(rcs, new.encode())
            return
        adjtime = self.files.path("/etc/adjtime")
        lines = F.read_bytes(adjtime).decode().splitlines() if os.path.exists(adjtime) else ["0.0 0 0.0", "0"]
        lines = (lines + ["", "", ""])[:3]
        lines[2] = "UTC" if clock == "UTC" else "LOCAL"
        F.atomic_write(adjtime, ("\n".join(lines) + "\n").encode(), 0o644)


def backend(files: Files | None = None) -> Timedatectl | FileMethod:
    """What Salt uses here: timedatectl whenever it is installed, else the files."""
    if files is None and shutil.which("timedatectl"):
        return Timedatectl()
    return FileMethod(files or Files())


def _same_zone(method: Timedatectl | FileMethod, name: str, files: Files) -> bool:
    """Salt's zone_compare: the zone's name, else /etc/localtime's content against the zone file."""
    try:
        return method.zone() == name
    except TimezoneError:
        zonefile = files.path(f"/usr/share/zoneinfo/{name}")
        if not os.path.exists(zonefile):
            raise TimezoneError(f'Can\'t find a local timezone "{name}"') from None
        try:
            return filecmp.cmp(files.path("/etc/localtime"), zonefile, shallow=False)
        except OSError as exc:
            raise TimezoneError(f"Failed to read /etc/localtime to determine current timezone: {exc.strerror}") \
                from None


def system(ctx: StateContext, name: str, utc: Any = True, **kwargs: Any) -> dict[str, Any]:
    """The system timezone is ``name``; the hardware clock keeps UTC (``utc: False``: local time)."""
    return apply_system(ctx, name, utc, None)


def apply_system(ctx: StateContext, name: str, utc: Any, files: Files | None) -> dict[str, Any]:
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None, "comment": ""}
    method = backend(files)
    files = files or Files()
    want_utc = utc is True or str(utc).lower() in ("true", "yes", "1")
    try:
        same = _same_zone(method, name, files)
    except TimezoneError as exc:
        return dict(ret, result=False, comment=f"Unable to compare desired timezone '{name}' to system timezone: "
                                               f"{exc}")
    try:
        is_utc = method.hwclock() != "localtime"
    except TimezoneError as exc:
        return dict(ret, result=False, comment=f"Unable to read the hardware clock setting: {exc}")
    messages = []
    if same:
        messages.append(f"Timezone {name} already set")
    if want_utc == is_utc:
        messages.append(f"UTC already set to {name}" if want_utc else f"Local time already set for {name}")
    if same and want_utc == is_utc:
        return dict(ret, result=True, comment=", ".join(messages))
    if ctx.test:
        todo = [] if same else [f"Timezone {name} needs to be set"]
        if want_utc != is_utc:
            todo.append(f"UTC needs to be set to {want_utc}")
        return dict(ret, comment=", ".join(todo))
    messages = []
    try:
        if not same:
            method.set_zone(name)
            ret["changes"]["timezone"] = name
            messages.append(f"Set timezone {name}")
        if want_utc != is_utc:
            method.set_hwclock("UTC" if want_utc else "localtime")
            ret["changes"]["utc"] = want_utc
            messages.append(f"Set UTC to {want_utc}")
    except (TimezoneError, OSError) as exc:
        return dict(ret, result=False, comment=", ".join([*messages, f"Failed to set timezone: {exc}"]))
    return dict(ret, result=True, comment=", ".join(messages))
