"""group: groups on this host (info, getent). Offline: a host without the group ({} / [])."""

from __future__ import annotations

import grp
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _format(entry: grp.struct_group) -> dict[str, Any]:
    return {"name": entry.gr_name, "passwd": entry.gr_passwd, "gid": entry.gr_gid, "members": list(entry.gr_mem)}


@reads_host(absent=constant({}))
def info(env: ModuleEnv, name: str, root: str | None = None) -> dict[str, Any]:
    """name, gid, members of a group ({} when there is no such group)."""
    try:
        return _format(grp.getgrnam(str(name)))
    except KeyError:
        return {}


@reads_host(absent=constant([]))
def getent(env: ModuleEnv, refresh: bool = False, root: str | None = None) -> list[dict[str, Any]]:
    """info of every group."""
    return [_format(g) for g in grp.getgrall()]
