"""user: accounts on this host (info, list_users, list_groups, primary_group, getent).

Offline the answers are those of a host without the account: {} / [] / ''.
"""

from __future__ import annotations

import grp
import os
import pwd
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _format(data: pwd.struct_passwd) -> dict[str, Any]:
    gecos = str(data.pw_gecos).split(",", 4)
    gecos += [""] * (5 - len(gecos))
    return {"gid": data.pw_gid, "groups": _groups(data.pw_name), "home": data.pw_dir, "name": data.pw_name,
            "passwd": data.pw_passwd, "shell": data.pw_shell, "uid": data.pw_uid, "fullname": gecos[0],
            "roomnumber": gecos[1], "workphone": gecos[2], "homephone": gecos[3], "other": gecos[4]}


def _groups(name: str) -> list[str]:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return []
    gids = set(os.getgrouplist(name, entry.pw_gid))
    out = []
    for gid in gids:
        try:
            out.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return sorted(out)


@reads_host(absent=constant({}))
def info(env: ModuleEnv, name: str, root: str | None = None) -> dict[str, Any]:
    """uid, gid, home, shell, groups, fullname ... of a user ({} when there is no such user)."""
    try:
        return _format(pwd.getpwnam(str(name)))
    except KeyError:
        return {}


@reads_host(absent=constant([]))
def list_users(env: ModuleEnv, root: str | None = None) -> list[str]:
    """Every user name, sorted."""
    return sorted(p.pw_name for p in pwd.getpwall())


@reads_host(absent=constant([]))
def list_groups(env: ModuleEnv, name: str) -> list[str]:
    """The groups of a user, sorted."""
    return _groups(str(name))


@reads_host(absent=constant(""))
def primary_group(env: ModuleEnv, name: str) -> str:
    """The name of a user's primary group."""
    try:
        return grp.getgrgid(pwd.getpwnam(str(name)).pw_gid).gr_name
    except KeyError:
        return ""


@reads_host(absent=constant([]))
def getent(env: ModuleEnv, refresh: bool = False, root: str | None = None) -> list[dict[str, Any]]:
    """info of every user."""
    return [_format(p) for p in pwd.getpwall()]
