"""The ``alternatives`` state module: Debian's alternatives system (install, remove, auto, set).

Salt 3008 ships this state in an extension (saltext-alternatives; its core only keeps the
execution module); saltpan has it built in, with the same arguments and results, through
``update-alternatives``.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["auto", "install", "remove", "set"]

ALTERNATIVES_DIR = "/etc/alternatives"


def unavailable() -> str | None:
    if not os.path.isdir(ALTERNATIVES_DIR) or shutil.which("update-alternatives") is None:
        return "Cannot load alternatives module: /etc/alternatives dir not found"
    return None


def _run(*args: str) -> cmdrun.CommandResult:
    return cmdrun.run(["update-alternatives", *args], cwd="/", env={"LC_ALL": "C"})


def query(name: str) -> dict[str, Any] | None:
    """``update-alternatives --query``: {"link", "status", "value", "alternatives": {path: priority}}."""
    res = _run("--query", name)
    if res.retcode != 0:
        return None
    out: dict[str, Any] = {"alternatives": {}}
    blocks = res.stdout.split("\n\n")
    for line in blocks[0].splitlines():
        key, _, value = line.partition(":")
        out[key.strip().lower()] = value.strip()
    for block in blocks[1:]:
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        if "Alternative" in fields:
            out["alternatives"][fields["Alternative"].strip()] = int(fields.get("Priority", "0").strip() or 0)
    return out


def current(name: str) -> str | None:
    try:
        return os.readlink(os.path.join(ALTERNATIVES_DIR, name))
    except OSError:
        return None


def install(ctx: StateContext, name: str, link: str, path: str, priority: Any, **kwargs: Any) -> dict[str, Any]:
    """``path`` is registered as an alternative for ``name`` (the link ``link``) with ``priority``."""
    ret: dict[str, Any] = {"name": name, "link": link, "path": path, "priority": priority, "result": True,
                           "changes": {}, "comment": ""}
    info = query(name)
    if info is not None and path in info["alternatives"]:
        if info["alternatives"][path] == int(priority):
            ret["comment"] = f"Alternative {path} for {name} is already registered"
            return ret
    if ctx.test:
        ret.update(result=None, comment=f"Alternative will be set for {name} to {path} with priority {priority}")
        return ret
    res = _run("--install", link, name, path, str(priority))
    info = query(name)
    if res.retcode != 0 or info is None or path not in info["alternatives"]:
        ret.update(result=False, comment=f"Alternative for {name} not installed: {(res.stderr or res.stdout).strip()}")
        return ret
    if current(name) == path:
        ret["comment"] = f"Alternative for {name} set to path {path} with priority {priority}"
    else:
        ret["comment"] = f"Alternative {path} for {name} registered with priority {priority}, but not set as current"
    ret["changes"] = {"name": name, "link": link, "path": path, "priority": priority}
    return ret


def remove(ctx: StateContext, name: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """``path`` is not an alternative for ``name``."""
    ret: dict[str, Any] = {"name": name, "path": path, "result": True, "changes": {}, "comment": ""}
    info = query(name)
    if info is None or path not in info["alternatives"]:
        ret["comment"] = f"Alternative for {name} doesn't exist"
        if info is not None:
            ret["comment"] = f"Alternative {path} for {name} doesn't exist"
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Alternative for {name} will be removed")
        return ret
    res = _run("--remove", name, path)
    info = query(name)
    if res.retcode != 0 or (info is not None and path in info["alternatives"]):
        ret.update(result=False, comment=f"Alternative for {name} not removed: {(res.stderr or res.stdout).strip()}")
        return ret
    now = current(name)
    ret["changes"] = {"path": now} if now else {}
    ret["comment"] = f"Alternative for {name} removed" + (f" and set to {now}" if now else "")
    if not now:
        ret["changes"] = {"path": None}
    return ret


def auto(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """``name`` is in automatic mode (the highest priority wins)."""
    ret: dict[str, Any] = {"name": name, "result": True, "changes": {}, "comment": ""}
    info = query(name)
    if info is None:
        return dict(ret, result=False, comment=f"Alternative {name} doesn't exist")
    if info.get("status") == "auto":
        return dict(ret, comment=f"{name} already in auto mode")
    if ctx.test:
        return dict(ret, result=None, comment=f"{name} will be put in auto mode")
    res = _run("--auto", name)
    if res.retcode != 0:
        return dict(ret, result=False, comment=(res.stderr or res.stdout).strip())
    return dict(ret, changes={"result": res.stdout.strip()}, comment=f"{name} put in auto mode")


def set(ctx: StateContext, name: str, path: str, **kwargs: Any) -> dict[str, Any]:  # noqa: A001 - Salt's name
    """``name`` points at ``path`` (manual mode)."""
    ret: dict[str, Any] = {"name": name, "path": path, "result": True, "changes": {}, "comment": ""}
    now = current(name)
    if now == path:
        return dict(ret, comment=f"Alternative for {name} already set to {path}")
    info = query(name)
    if info is None or path not in info["alternatives"]:
        return dict(ret, result=False, comment=f"Alternative {path} for {name} doesn't exist")
    if ctx.test:
        return dict(ret, result=None, comment=f"Alternative for {name} will be set to path {path}")
    res = _run("--set", name, path)
    if res.retcode != 0 or current(name) != path:
        return dict(ret, result=False, comment=f"Alternative for {name} not updated: "
                                               f"{(res.stderr or res.stdout).strip()}")
    return dict(ret, changes={"path": path}, comment=f"Alternative for {name} set to path {path}")
