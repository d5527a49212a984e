"""The ``sysctl`` state module: ``present`` (a kernel parameter, set now and kept in a config file).

As Salt 3008's ``linux_sysctl``: the line ``name = value`` is written to the config file
(``/etc/sysctl.d/99-salt.conf`` where systemd runs, else ``/etc/sysctl.conf``) and the
running value is set with ``sysctl -w``. Values compare with runs of whitespace equal.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F
from runtime.states._service_init import systemd_booted

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["present"]

CONFIG_HEADER = "#\n# Kernel sysctl configuration\n#\n"


def unavailable() -> str | None:
    return None if shutil.which("sysctl") else "Command 'sysctl' cannot be found"


def default_config() -> str:
    return "/etc/sysctl.d/99-salt.conf" if systemd_booted() else "/etc/sysctl.conf"


def _squash(value: Any) -> str:
    return re.sub(r"\s+", " ", str(value)).strip()


def configured(config: str) -> dict[str, str] | None:
    """``key = value`` lines of the config file ({} when it does not exist, None when unreadable)."""
    if not os.path.exists(config):
        return {}
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    out = {}
    for line in lines:
        line = line.strip()
        if not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.rstrip()] = value.lstrip()
    return out


def running_value(name: str) -> str:
    """The kernel's current value ("" when the parameter does not exist)."""
    res = cmdrun.run(["sysctl", "-n", name], cwd="/")
    return res.stdout if res.retcode == 0 else ""


def assign_command(name: str, value: Any) -> list[str]:
    return ["sysctl", "-w", f"{name}={value}"]


def _assign(name: str, value: Any) -> None:
    if not os.path.exists("/proc/sys/" + name.translate(str.maketrans("./", "/."))):
        raise cmdrun.CommandError(f"sysctl {name} does not exist")
    res = cmdrun.run(assign_command(name, value), cwd="/")
    if res.retcode != 0 or "Invalid argument" in res.stderr:
        raise cmdrun.CommandError(f"sysctl -w failed: {res.stderr or res.stdout}")


def _edited(config: str, name: str, value: Any) -> tuple[bytes, bool] | None:
    """The config file's new content, and whether the line was there with this value already.
    None when it cannot be read."""
    if os.path.exists(config):
        try:
            with open(config, encoding="utf-8", errors="replace") as handle:
                lines = handle.readlines()
        except OSError:
            return None
    else:
        lines = CONFIG_HEADER.splitlines(keepends=True)
    out, seen, same = [], False, False
    for line in lines:
        key, sep, current = line.partition("=")
        if not sep or key.strip().startswith("#") or key.strip() != name:
            out.append(line)
            continue
        seen = True
        if _squash(current) == _squash(value):
            same = True
            out.append(line)
        else:
            out.append(f"{name} = {value}\n")
    if not seen:
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out.append(f"{name} = {value}\n")
    return "".join(out).encode(), same


def present(ctx: StateContext, name: str, value: Any, config: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Kernel parameter ``name`` has ``value`` now and in ``config``."""
    ret: dict[str, Any] = {"name": name, "result": True, "changes": {}, "comment": ""}
    config = config or default_config()
    current = running_value(name)
    if ctx.test:
        in_config = configured(config)
        if in_config is None:
            ret.update(result=None, comment=f"Sysctl option {name} might be changed, we failed to check config "
                                            f"file at {config}. The file is either unreadable, or missing.")
        elif current and name in in_config:
            if _squash(current) == _squash(value) and _squash(in_config[name]) == _squash(value):
                ret["comment"] = f"Sysctl value {name} = {value} is already set"
            else:
                ret.update(result=None, comment=f"Sysctl option {name} set to be changed to {value}")
        elif current:
            if _squash(current) != _squash(value):
                ret.update(result=None, comment=f"Sysctl option {name} set to be changed to {value}")
            else:
                ret.update(result=None, comment="Sysctl value is currently set on the running system but not in "
                                                f"a config file. Sysctl option {name} set to be changed to "
                                                f"{value} in config file.")
        elif name in in_config:
            ret.update(result=None, comment=f"Sysctl value {name} is present in configuration file but is not "
                                            f"present in the running config. The value {name} is set to be "
                                            f"changed to {value}")
        else:
            ret.update(result=None, comment=f"Sysctl option {name} would be changed to {value}")
        return ret
    edited = _edited(config, name, value)
    if edited is None:
        ret.update(result=False, comment=f"Failed to set {name} to {value}: Could not read from file: {config}")
        return ret
    data, in_file = edited
    if in_file and _squash(current) == _squash(value):
        ret["comment"] = f"Sysctl value {name} = {value} is already set"
        return ret
    try:
        if _squash(current) != _squash(value):
            _assign(name, value)
        if not in_file:
            if os.path.exists(config):
                F.write_preserving(config, data)
            else:
                os.makedirs(os.path.dirname(config) or "/", exist_ok=True)
                F.atomic_write(config, data, 0o644)
    except (cmdrun.CommandError, OSError) as exc:
        ret.update(result=False, comment=f"Failed to set {name} to {value}: {exc}")
        return ret
    ret.update(changes={name: value}, comment=f"Updated sysctl value {name} = {value}")
    return ret
