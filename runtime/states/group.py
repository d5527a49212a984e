"""The ``group`` state module: local groups (present / absent) through groupadd/groupmod/gpasswd.

Test mode reports the predicted changes (Salt 3008 reports none for group.present).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _accounts as A

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]


def _wanted_changes(name: str, gid: Any, addusers: Any, delusers: Any, members: Any) -> dict[str, Any] | None:
    """What group.present must change (Salt's ``_changes``); None when the group is missing."""
    info = A.group_info(name)
    if not info:
        return None
    change: dict[str, Any] = {}
    if gid not in (None, ""):
        gid = int(gid)
        if info["gid"] != gid:
            change["gid"] = gid
    current = set(info["members"])
    if members is not None and not members:
        if current:
            change["delusers"] = sorted(current)
    elif members:
        if current.symmetric_difference(members):
            change["members"] = list(members)
    if addusers:
        missing = [u for u in addusers if u not in current]
        if missing:
            change["addusers"] = missing
    if delusers:
        present_ = [u for u in delusers if u in current]
        if present_:
            change["delusers"] = present_
    return change


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    return [str(v) for v in value]


def present(
    ctx: StateContext,
    name: str,
    gid: Any = None,
    system: bool = False,
    addusers: Any = None,
    delusers: Any = None,
    members: Any = None,
    non_unique: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Make sure the group exists, with ``gid`` and members (``members`` exact, or ``addusers``/``delusers``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True,
                           "comment": f"Group {name} is present and up to date"}
    addusers, delusers, members = _as_list(addusers), _as_list(delusers), _as_list(members)
    if members is not None and (addusers is not None or delusers is not None):
        ret.update(result=None, comment='Error: Conflicting options "members" with "addusers" and/or '
                                        '"delusers" can not be used together. ')
        return ret
    if addusers and delusers and not set(addusers).isdisjoint(delusers):
        ret.update(result=None, comment="Error. Same user(s) can not be added and deleted simultaneously")
        return ret
    try:
        if gid not in (None, ""):
            int(gid)
    except (TypeError, ValueError):
        ret.update(result=False, comment=f"Invalid gid '{gid}': use a number")
        return ret
    wanted = _wanted_changes(name, gid, addusers, delusers, members)
    if wanted:
        ret["comment"] = "The following group attributes are set to be changed:\n" + "".join(
            f"{key}: {val}\n" for key, val in wanted.items())
        if ctx.test:
            ret.update(result=None, changes=dict(wanted))
            return ret
        try:
            if "gid" in wanted:
                A.run_tool(["groupmod", "-g", str(wanted["gid"]), *(["-o"] if non_unique else []), name])
            for user in wanted.get("addusers", []):
                A.run_tool(["gpasswd", "-a", user, name])
            for user in wanted.get("delusers", []):
                A.run_tool(["gpasswd", "-d", user, name])
            if "members" in wanted:
                A.run_tool(["gpasswd", "-M", ",".join(members or []), name])
        except A.AccountError as exc:
            ret.update(result=False, comment=f"{ret['comment']}{exc}")
        remaining = _wanted_changes(name, gid, addusers, delusers, members)
        if remaining:
            ret["result"] = False
            ret["comment"] += "Some changes could not be applied"
            ret["changes"] = {"Failed": remaining}
        elif ret["result"]:
            ret["changes"] = {"Final": "All changes applied successfully"}
        return ret
    if wanted is not None:
        return ret

    # the group does not exist
    if ctx.test:
        predicted: dict[str, Any] = {"name": name}
        if gid not in (None, ""):
            predicted["gid"] = int(gid)
        if members or addusers:
            predicted["members"] = members or addusers
        ret.update(result=None, comment=f"Group {name} set to be added", changes=predicted)
        return ret
    if gid not in (None, "") and not non_unique:
        holder = A.gid_taken(int(gid))
        if holder is not None:
            ret.update(result=False,
                       comment=f"Group {name} is not present but gid {gid} is already taken by group {holder}")
            return ret
    argv = ["groupadd"]
    if gid not in (None, ""):
        argv += ["-g", str(int(gid))]
    if system:
        argv.append("-r")
    if non_unique:
        argv.append("-o")
    try:
        A.run_tool([*argv, name])
        initial = members or addusers
        if initial:
            A.run_tool(["gpasswd", "-M", ",".join(initial), name])
    except A.AccountError as exc:
        ret.update(result=False, comment=f"Failed to create new group {name}: {exc}")
        return ret
    ret["comment"] = f"New group {name} created"
    ret["changes"] = A.group_info(name)
    remaining = _wanted_changes(name, gid, addusers, delusers, members)
    if remaining:
        ret.update(result=False, changes={"Failed": remaining},
                   comment=f"Group {name} has been created but, some changes could not be applied")
    return ret


def absent(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure the group does not exist."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if not A.group_info(name):
        ret["comment"] = "Group not present"
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Group {name} is set for removal", changes={name: ""})
        return ret
    try:
        A.run_tool(["groupdel", name])
    except A.AccountError as exc:
        ret.update(result=False, comment=f"Failed to remove group {name}: {exc}")
        return ret
    ret.update(changes={name: ""}, comment=f"Removed group {name}")
    return ret
