"""The ``mount`` state module: ``mounted``, ``unmounted``, ``fstab_present``, ``fstab_absent``,
and ``mod_watch`` (remount).

As Salt 3008's: the mount table is ``/proc/self/mounts``; a mounted target whose options
differ from ``opts`` is remounted; with ``persist`` (default True) the line
``device<TAB><TAB>name<TAB>fstype<TAB>opts<TAB>dump pass`` is kept in ``config`` (default
``/etc/fstab``; written atomically). Size options compare by value (``size=1m`` is
``size=1024k``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["fstab_absent", "fstab_present", "mod_watch", "mounted", "unmounted"]

MOUNTS = "/proc/self/mounts"
# options that never show in the mount table (Salt's mount state ignores them too)
_NOT_IN_TABLE = {"defaults", "noauto", "nofail", "auto", "_netdev", "user", "users", "nouser", "owner", "group",
                 "x-systemd.automount", "bind", "rbind", "comment"}


@dataclass(frozen=True)
class Mount:
    device: str
    name: str
    fstype: str
    opts: list[str]


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def active(name: str) -> Mount | None:
    """The last mount on ``name`` (what is visible there)."""
    found = None
    try:
        with open(MOUNTS, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 4 and _unescape(parts[1]) == name.rstrip("/") or (
                        len(parts) >= 4 and name == "/" and parts[1] == "/"):
                    found = Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2], parts[3].split(","))
    except OSError:
        return None
    return found


def _size(value: str) -> int | None:
    found = re.fullmatch(r"(\d+)([kmgKMG%]?)", value)
    if not found or found.group(2) == "%":
        return None
    return int(found.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[found.group(2).lower()]


def changed_opts(wanted: list[str], current: list[str]) -> list[str]:
    """Wanted options the mount table does not show (sizes compared by value)."""
    have = set(current)
    sizes = {o.split("=", 1)[0]: _size(o.split("=", 1)[1]) for o in current if "=" in o}
    out = []
    for opt in wanted:
        key, eq, value = opt.partition("=")
        if key in _NOT_IN_TABLE or key.startswith("x-") or opt in have:
            continue
        if eq and key in sizes and sizes[key] is not None and _size(value) == sizes[key]:
            continue
        if opt == "rw" and "ro" not in have:
            continue
        out.append(opt)
    return out


def _opts_list(opts: Any) -> list[str]:
    if isinstance(opts, list):
        return [str(o) for o in opts]
    return [o for o in str(opts or "defaults").split(",") if o]


def fstab_line(device: str, name: str, fstype: str, opts: list[str], dump: Any, pass_num: Any) -> str:
    return f"{device}\t\t{name}\t{fstype}\t{','.join(opts)}\t{dump} {pass_num}\n"


def _fstab(config: str) -> list[str]:
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            return handle.readlines()
    except FileNotFoundError:
        return []


def _entry_index(lines: list[str], name: str) -> int | None:
    for index, line in enumerate(lines):
        parts = line.split()
        if parts and not parts[0].startswith("#") and len(parts) >= 2 and parts[1] == name:
            return index
    return None


def _write_fstab(config: str, lines: list[str]) -> None:
    data = "".join(lines).encode()
    if os.path.exists(config):
        F.write_preserving(config, data)
    else:
        F.atomic_write(config, data, 0o644)


def set_fstab(config: str, line: str, name: str, test: bool) -> str:
    """"new", "update" or "present" (and the file written unless test)."""
    lines = _fstab(config)
    index = _entry_index(lines, name)
    if index is not None and lines[index].split() == line.split():
        return "present"
    if not test:
        if index is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(line)
        else:
            lines[index] = line
        _write_fstab(config, lines)
    return "new" if index is None else "update"


def _run(args: list[str]) -> cmdrun.CommandResult:
    return cmdrun.run(args, cwd="/", timeout=300)


def mount_command(name: str, device: str, fstype: str, opts: list[str]) -> list[str]:
    return ["mount", "-t", fstype, "-o", ",".join(opts), device, name]


def mounted(ctx: StateContext, name: str, device: str, fstype: str, mkmnt: Any = False, opts: Any = "defaults",
            dump: Any = 0, pass_num: Any = 0, config: str = "/etc/fstab", persist: Any = True, mount: Any = True,
            **kwargs: Any) -> dict[str, Any]:
    """``device`` is mounted on ``name`` with ``opts`` (and kept in ``config`` with ``persist``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    name = name.rstrip("/") or "/"
    if not os.path.isabs(name):
        return dict(ret, result=False, comment=f"Target {name} is not an absolute path")
    options = _opts_list(opts)
    comments = []
    current = active(name)
    if mount:
        if current is not None:
            changed = changed_opts(options, current.opts)
            if changed:
                if ctx.test:
                    return dict(ret, result=None, comment=f"Remount would be forced because options "
                                                          f"({','.join(changed)})changed")
                res = _run(["mount", "-o", ",".join(["remount", *[o for o in options if o != "defaults"]]), name])
                if res.retcode != 0:
                    return dict(ret, result=False, comment=f"Unable to remount {name}: {res.stderr.strip()}")
                ret["changes"]["umount"] = f"Forced remount because options ({','.join(changed)}) changed"
            comments.append("Target was already mounted")
        else:
            if not os.path.isdir(name):
                if ctx.test:
                    return dict(ret, result=None, comment=f"{name} would be created and mounted" if mkmnt
                                else f"{name} does not exist and would not be created")
                if not mkmnt:
                    return dict(ret, result=False, comment=f"Mount directory is not present: {name}")
                os.makedirs(name)
            elif ctx.test:
                return dict(ret, result=None, comment=f"{name} would be mounted")
            res = _run(mount_command(name, device, fstype, options))
            if res.retcode != 0:
                return dict(ret, result=False, comment=f"Unable to mount {device} on {name}: {res.stderr.strip()}")
            ret["changes"]["mount"] = True
            comments.append("Target was successfully mounted")
    if persist:
        line = fstab_line(device, name, fstype, options, dump, pass_num)
        try:
            state = set_fstab(config, line, name, ctx.test)
        except OSError as exc:
            return dict(ret, result=False, comment=f"Unable to write {config}: {exc}")
        if state == "present":
            comments.append("Entry already exists in the fstab.")
        elif ctx.test:
            ret["result"] = None
            comments.append(f"{name} needs to be {'added to' if state == 'new' else 'updated in'} {config}")
        else:
            ret["changes"]["persist"] = state
            comments.append("Added new entry to the fstab." if state == "new" else "Updated the entry in the fstab.")
    ret["comment"] = ". ".join(c.rstrip(".") for c in comments) + "." if comments and persist else \
        ". ".join(comments)
    return ret


def unmounted(ctx: StateContext, name: str, device: str | None = None, config: str = "/etc/fstab",
              persist: Any = False, **kwargs: Any) -> dict[str, Any]:
    """Nothing is mounted on ``name`` (``persist``: and ``config`` has no entry for it)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    name = name.rstrip("/") or "/"
    current = active(name)
    comments = []
    if current is not None and (device is None or current.device == device):
        if ctx.test:
            return dict(ret, result=None, comment=f"Mount point {name} is mounted but should not be")
        res = _run(["umount", name])
        if res.retcode != 0:
            return dict(ret, result=False, comment=f"Unable to unmount {name}: {res.stderr.strip()}")
        ret["changes"]["umount"] = True
        comments.append("Target was successfully unmounted")
    else:
        comments.append("Target was already unmounted")
    if persist:
        lines = _fstab(config)
        index = _entry_index(lines, name)
        if index is None:
            comments.append("fstab entry not found")
        elif ctx.test:
            ret["result"] = None
            comments.append(f"Mount point {name} is unmounted but needs to be purged from {config} to be made "
                            "persistent")
        else:
            del lines[index]
            _write_fstab(config, lines)
            ret["changes"]["persist"] = "purged"
            comments.append("Removed target from fstab")
    ret["comment"] = ". ".join(comments)
    return ret


def fstab_present(ctx: StateContext, name: str, fs_file: str, fs_vfstype: str, fs_mntops: Any = "defaults",
                  fs_freq: Any = 0, fs_passno: Any = 0, config: str = "/etc/fstab", **kwargs: Any) -> dict[str, Any]:
    """``config`` has the entry ``name`` (the device) on ``fs_file``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": []}
    line = fstab_line(name, fs_file, fs_vfstype, _opts_list(fs_mntops), fs_freq, fs_passno)
    try:
        state = set_fstab(config, line, fs_file, ctx.test)
    except OSError as exc:
        return dict(ret, result=False, comment=f"Unable to write {config}: {exc}")
    if state == "present":
        ret["comment"] = f"{fs_file} entry is already in {config}."
    elif ctx.test:
        ret.update(result=None, comment=f"{fs_file} entry will be {'written in' if state == 'new' else 'updated in'} "
                                        f"{config}.")
    else:
        ret["changes"]["persist"] = state
        ret["comment"] = f"{fs_file} entry {'added in' if state == 'new' else 'updated in'} {config}."
    return ret


def fstab_absent(ctx: StateContext, name: str, fs_file: str, config: str = "/etc/fstab",
                 **kwargs: Any) -> dict[str, Any]:
    """``config`` has no entry on ``fs_file``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    lines = _fstab(config)
    index = _entry_index(lines, fs_file)
    if index is None:
        return dict(ret, comment=f"{fs_file} entry is already missing in {config}.")
    if ctx.test:
        return dict(ret, result=None, comment=f"{fs_file} entry will be removed from {config}.")
    del lines[index]
    _write_fstab(config, lines)
    return dict(ret, changes={"persist": "removed"}, comment=f"{fs_file} entry removed from {config}.")


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, device: str | None = None,
              fstype: str | None = None, opts: Any = "defaults", **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: remount (mount when not mounted)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if sfun != "mounted":
        return dict(ret, comment=f"Watch not supported in {sfun} at this time")
    if ctx.test:
        return dict(ret, result=None, comment=f"{name} would be remounted")
    options = [o for o in _opts_list(opts) if o != "defaults"]
    if active(name.rstrip("/") or "/") is not None:
        res = _run(["mount", "-o", ",".join(["remount", *options]), name])
    elif device and fstype:
        res = _run(mount_command(name, device, fstype, options or ["defaults"]))
    else:
        return dict(ret, result=False, comment=f"{name} failed to remount: not mounted, and no device/fstype")
    if res.retcode != 0:
        return dict(ret, result=False, comment=f"{name} failed to remount: {res.stderr.strip()}")
    return dict(ret, comment=f"{name} remounted")
