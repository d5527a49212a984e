"""The ``user`` state module: local users (present / absent) through useradd/usermod/userdel.

``password`` is a crypt hash, as in Salt (``hash_password`` is not supported). Test mode
reports the predicted changes (Salt 3008 reports none for user.present).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from runtime.states import _accounts as A
from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]

_GECOS = ("fullname", "roomnumber", "workphone", "homephone", "other")


class _Refused(Exception):
    pass


def _group_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    return [str(v) for v in value]


def _wanted_changes(name: str, uid: Any, gid: Any, groups: list[str] | None, optional: list[str] | None,
                    remove_groups: bool, home: Any, createhome: bool, password: Any, enforce_password: bool,
                    empty_password: bool, shell: Any, gecos: dict[str, Any], allow_uid_change: bool,
                    allow_gid_change: bool) -> dict[str, Any] | None:
    """What user.present must change (Salt's ``_changes``); None when the user does not exist."""
    info = A.user_info(name)
    if not info:
        return None
    change: dict[str, Any] = {}
    wanted_groups = sorted(set((groups or []) + (optional or [])))
    current_groups = list(info["groups"])
    if not remove_groups or (groups is None and not optional):
        wanted_groups = sorted(set(wanted_groups + current_groups))
    if uid not in (None, "") and info["uid"] != int(uid):
        change["uid"] = int(uid)
    wanted_gid = F.resolve_gid(gid) if gid not in (None, "") else None
    if gid not in (None, "") and info["gid"] != wanted_gid:
        change["gid"] = gid
    default_grp = F.group_name(wanted_gid if wanted_gid is not None else info["gid"])
    old_default = F.group_name(info["gid"])
    for grp_name in {default_grp, old_default}:
        if grp_name in current_groups:
            current_groups.remove(grp_name)
        if grp_name == default_grp and grp_name in wanted_groups:
            wanted_groups.remove(grp_name)
    if name in current_groups and name not in wanted_groups:
        current_groups.remove(name)
    differ = set(current_groups) != set(wanted_groups) if remove_groups else bool(
        set(wanted_groups) - set(current_groups))
    if differ and (wanted_groups or remove_groups):
        change["groups"] = wanted_groups
    if home and info["home"] != home:
        change["home"] = home
    if createhome:
        new_home = home or info["home"]
        if new_home and not os.path.isdir(new_home):
            change["homeDoesNotExist"] = new_home
    if shell and info["shell"] != shell:
        change["shell"] = shell
    current_hash = A.shadow_hash(name)
    if password and not empty_password and enforce_password and current_hash is not None \
            and current_hash != password:
        change["passwd"] = password
    if empty_password and current_hash not in (None, ""):
        change["empty_password"] = True
    for field in _GECOS:
        value = gecos.get(field)
        if value is not None and info[field] != str(value):
            change[field] = str(value)
    errors = []
    if not allow_uid_change and "uid" in change:
        errors.append(f"Changing uid ({info['uid']} -> {uid}) not permitted, set allow_uid_change to True to "
                      "force this change. Note that this will not change file ownership.")
    if not allow_gid_change and "gid" in change:
        errors.append(f"Changing gid ({info['gid']} -> {gid}) not permitted, set allow_gid_change to True to "
                      "force this change. Note that this will not change file ownership.")
    if errors:
        raise _Refused(" ".join(errors))
    return change


def _gecos_string(info: dict[str, Any], updates: dict[str, Any]) -> str:
    fields = [str(updates.get(f, info.get(f, "")) or "") for f in _GECOS]
    while fields and fields[-1] == "":
        fields.pop()
    return ",".join(fields)


def _apply(name: str, change: dict[str, Any], remove_groups: bool, persist_home: bool) -> None:
    info = A.user_info(name)
    argv: list[str] = []
    if "uid" in change:
        argv += ["-u", str(change["uid"])]
    if "gid" in change:
        argv += ["-g", str(change["gid"])]
    if "home" in change:
        argv += ["-d", str(change["home"])] + (["-m"] if persist_home else [])
    if "shell" in change:
        argv += ["-s", str(change["shell"])]
    if any(f in change for f in _GECOS):
        argv += ["-c", _gecos_string(info, change)]
    if "passwd" in change:
        argv += ["-p", str(change["passwd"])]
    if argv:
        A.run_tool(["usermod", *argv, name])
    if "groups" in change:
        groups = ",".join(change["groups"])
        A.run_tool(["usermod", *(["-G", groups] if remove_groups else ["-a", "-G", groups]), name])
    if change.get("empty_password"):
        A.run_tool(["passwd", "-d", name])
    if "homeDoesNotExist" in change:
        path = str(change["homeDoesNotExist"])
        if not os.path.isdir(path):
            post = A.user_info(name)
            os.makedirs(path, mode=0o755, exist_ok=True)
            os.chown(path, post["uid"], post["gid"])
            os.chmod(path, 0o755)


def present(
    ctx: StateContext,
    name: str,
    uid: Any = None,
    gid: Any = None,
    usergroup: Any = None,
    groups: Any = None,
    optional_groups: Any = None,
    remove_groups: bool = True,
    home: Any = None,
    createhome: bool = True,
    persist_home: bool = False,
    password: Any = None,
    hash_password: bool = False,
    enforce_password: bool = True,
    empty_password: bool = False,
    shell: Any = None,
    unique: bool = True,
    system: bool = False,
    fullname: Any = None,
    roomnumber: Any = None,
    workphone: Any = None,
    homephone: Any = None,
    other: Any = None,
    nologinit: bool = False,
    allow_uid_change: bool = False,
    allow_gid_change: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Make sure the user exists with the given uid, gid, groups, home, shell, GECOS and password hash."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True,
                           "comment": f"User {name} is present and up to date"}
    if hash_password:
        ret.update(result=False, comment="hash_password is not supported: give 'password' as a crypt hash "
                                         "(e.g. from 'openssl passwd -6')")
        return ret
    gecos = {"fullname": fullname, "roomnumber": roomnumber, "workphone": workphone,
             "homephone": homephone, "other": other}
    for field in ("fullname", "roomnumber", "workphone"):
        value = gecos[field]
        if isinstance(value, str) and "," in value:
            ret.update(result=False, comment=f"Unsupported char ',' in {value}")
            return ret
    for value, what in ((uid, "uid"),):
        if value not in (None, "") and not str(value).isdigit():
            ret.update(result=False, comment=f"Invalid {what} '{value}': use a number")
            return ret
    groups_l = _group_list(groups)
    missing_groups: list[str] = []
    if groups_l:
        missing_groups = [g for g in groups_l if not A.group_info(g)]
        if missing_groups:
            if not ctx.test:
                ret.update(result=False,
                           comment="The following group(s) are not present: " + ",".join(missing_groups))
                return ret
            groups_l = [g for g in groups_l if g not in missing_groups]
    optional = [g for g in (_group_list(optional_groups) or []) if A.group_info(g)] or None
    if gid not in (None, "") and F.resolve_gid(gid) is None and not ctx.test:
        ret.update(result=False, comment=f"Group {gid} (gid) is not present")
        return ret
    try:
        change = _wanted_changes(name, uid, gid, groups_l, optional, remove_groups, home, createhome, password,
                                 enforce_password, empty_password, shell, gecos, allow_uid_change,
                                 allow_gid_change)
    except _Refused as exc:
        ret.update(result=False, comment=str(exc))
        return ret

    if change:
        if ctx.test:
            shown = {k: ("XXX-REDACTED-XXX" if k == "passwd" else v) for k, v in change.items()}
            ret.update(result=None, changes=shown,
                       comment="The following user attributes are set to be changed:\n"
                               + "".join(f"{k}: {v}\n" for k, v in shown.items())
                               + (f"groups (pending creation): {','.join(missing_groups)}\n" if missing_groups else ""))
            return ret
        pre = A.user_info(name)
        pre_hash = A.shadow_hash(name)
        try:
            _apply(name, change, remove_groups, persist_home)
        except (A.AccountError, OSError) as exc:
            ret.update(result=False, comment=f"Failed to update user {name}: {exc}")
        post = A.user_info(name)
        for key, value in post.items():
            if pre.get(key) != value:
                ret["changes"][key] = value
        if A.shadow_hash(name) != pre_hash:
            ret["changes"]["passwd"] = "XXX-REDACTED-XXX"
        if ret["changes"] and ret["result"]:
            ret["comment"] = f"Updated user {name}"
        if ret["result"]:
            try:
                left = _wanted_changes(name, uid, gid, groups_l, optional, remove_groups, home, createhome,
                                       password, enforce_password, empty_password, shell, gecos, True, True)
            except _Refused:
                left = None
            if left:
                ret.update(result=False, comment=f"These values could not be changed: {left}")
        return ret
    if change is not None:
        return ret

    # the user does not exist
    if ctx.test:
        predicted: dict[str, Any] = {"name": name}
        for key, value in (("uid", uid), ("gid", gid), ("home", home), ("shell", shell)):
            if value not in (None, ""):
                predicted[key] = value
        if groups_l or optional or missing_groups:
            predicted["groups"] = sorted(set((groups_l or []) + (optional or []) + missing_groups))
        comment = f"User {name} set to be added"
        if missing_groups:
            comment += " (pending groups: " + ",".join(missing_groups) + ")"
        ret.update(result=None, comment=comment, changes=predicted)
        return ret
    if uid not in (None, "") and unique and A.uid_taken(int(uid)):
        ret.update(result=False, comment=f"Failed to create new user {name}: uid {uid} is already taken by "
                                         f"user {A.uid_taken(int(uid))}")
        return ret
    argv = ["useradd"]
    if uid not in (None, ""):
        argv += ["-u", str(int(uid))]
    if gid not in (None, ""):
        argv += ["-g", str(gid)]
    elif usergroup is True:
        argv.append("-U")
    elif usergroup is False:
        argv.append("-N")
    all_groups = sorted(set((groups_l or []) + (optional or [])))
    if all_groups:
        argv += ["-G", ",".join(all_groups)]
    if home:
        argv += ["-d", str(home)]
    argv.append("-m" if createhome else "-M")
    if shell:
        argv += ["-s", str(shell)]
    gecos_text = _gecos_string({}, gecos)
    if gecos_text:
        argv += ["-c", gecos_text]
    if system:
        argv.append("-r")
    if not unique:
        argv.append("-o")
    if nologinit:
        argv.append("-l")
    try:
        A.run_tool([*argv, name])
        if password and not empty_password:
            A.run_tool(["usermod", "-p", str(password), name])
        if empty_password:
            A.run_tool(["passwd", "-d", name])
    except A.AccountError as exc:
        ret.update(result=False, comment=f"Failed to create new user {name}: {exc}")
        return ret
    ret["comment"] = f"New user {name} created"
    ret["changes"] = A.user_info(name)
    if not createhome:
        ret["changes"]["home"] = ""
    if password and not empty_password:
        ret["changes"]["password"] = "XXX-REDACTED-XXX"
    return ret


def absent(ctx: StateContext, name: str, purge: bool = False, force: bool = False,
           **kwargs: Any) -> dict[str, Any]:
    """Make sure the user does not exist (``purge`` removes the home directory too)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    info = A.user_info(name)
    if not info:
        ret["comment"] = f"User {name} is not present"
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"User {name} set for removal", changes={name: "removed"})
        return ret
    before = set(info["groups"])
    argv = ["userdel"] + (["-r"] if purge else []) + (["-f"] if force else []) + [name]
    try:
        A.run_tool(argv)
    except A.AccountError as exc:
        ret.update(result=False, comment=f"Failed to remove user {name}: {exc}")
        return ret
    for group in sorted(before):
        if not A.group_info(group):
            ret["changes"][f"{group} group"] = "removed"
    ret["changes"][name] = "removed"
    ret["comment"] = f"Removed user {name}"
    return ret
