"""Local user and group records, and the shadow-utils commands that change them.

Reads go through the ``pwd``/``grp`` databases (NSS) and ``/etc/shadow``; changes go through
``useradd``/``usermod``/``userdel``/``groupadd``/``groupmod``/``groupdel``/``gpasswd``, so the
distribution's policy (login.defs, skeleton files, user private groups) applies as it does
for Salt.
"""

from __future__ import annotations

import grp
import os
import pwd
from typing import Any

from runtime import cmdrun
from runtime.states._files import group_name


class AccountError(Exception):
    """A shadow-utils command failed; the message names the command and its error."""


def run_tool(argv: list[str], stdin: str | None = None) -> str:
    """Run a shadow-utils command; raise AccountError with its stderr when it fails."""
    try:
        res = cmdrun.run(argv, cwd="/", stdin=stdin)
    except cmdrun.CommandError as exc:
        raise AccountError(str(exc)) from exc
    if res.retcode != 0:
        detail = res.stderr or res.stdout or f"exit status {res.retcode}"
        raise AccountError(f"{argv[0]} failed: {detail}")
    return res.stdout


def group_info(name: str) -> dict[str, Any]:
    """Salt's ``group.info``: name, passwd, gid, members (empty dict when absent)."""
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return {}
    return {"name": entry.gr_name, "passwd": entry.gr_passwd, "gid": entry.gr_gid,
            "members": list(entry.gr_mem)}


def user_groups(name: str, primary_gid: int) -> list[str]:
    """Every group the user belongs to, primary included, sorted (Salt's ``list_groups``)."""
    names = {g.gr_name for g in grp.getgrall() if name in g.gr_mem}
    names.add(group_name(primary_gid))
    return sorted(names)


def user_info(name: str) -> dict[str, Any]:
    """Salt's ``user.info`` (empty dict when the user does not exist)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return {}
    gecos = entry.pw_gecos.split(",", 4)
    gecos += [""] * (5 - len(gecos))
    return {
        "gid": entry.pw_gid,
        "groups": user_groups(entry.pw_name, entry.pw_gid),
        "home": entry.pw_dir,
        "name": entry.pw_name,
        "passwd": entry.pw_passwd,
        "shell": entry.pw_shell,
        "uid": entry.pw_uid,
        "fullname": gecos[0],
        "roomnumber": gecos[1],
        "workphone": gecos[2],
        "homephone": gecos[3],
        "other": gecos[4],
    }


def shadow_hash(name: str, shadow_file: str = "/etc/shadow") -> str | None:
    """The password hash of ``name`` from /etc/shadow (None when unreadable or absent)."""
    try:
        with open(shadow_file, encoding="utf-8") as handle:
            for line in handle:
                fields = line.rstrip("\n").split(":")
                if fields and fields[0] == name:
                    return fields[1] if len(fields) > 1 else ""
    except OSError:
        return None
    return None


def uid_taken(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def gid_taken(gid: int) -> str | None:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None


def have_tool(name: str) -> bool:
    return any(os.access(os.path.join(d, name), os.X_OK)
               for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"))
