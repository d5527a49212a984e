"""user and group states, for real: a throwaway user and group are created, changed and removed."""

from __future__ import annotations

import grp
import os
import pwd
import uuid

import pytest

from runtime.states import group, user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/sbin/useradd"),
                                reason="needs root and shadow-utils")


@pytest.fixture
def names():
    suffix = uuid.uuid4().hex[:6]
    grp_name, usr_name, extra = f"spg{suffix}", f"spu{suffix}", f"spx{suffix}"
    yield grp_name, usr_name, extra
    for name in (usr_name,):
        if _exists(pwd.getpwnam, name):
            os.system(f"userdel -r {name} >/dev/null 2>&1")
    for name in (grp_name, extra, usr_name):
        if _exists(grp.getgrnam, name):
            os.system(f"groupdel {name} >/dev/null 2>&1")


def _exists(getter, name):
    try:
        getter(name)
        return True
    except KeyError:
        return False


def _free_id(start: int = 42000) -> int:
    used = {p.pw_uid for p in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()}
    while start in used:
        start += 1
    return start


def test_group_lifecycle(ctx, tctx, names):
    name, member, _ = names
    gid = _free_id()
    predicted = group.present(tctx, name, gid=gid)
    assert predicted["result"] is None and predicted["changes"] == {"name": name, "gid": gid}
    assert not _exists(grp.getgrnam, name)
    made = group.present(ctx, name, gid=gid)
    assert made["result"] is True and made["comment"] == f"New group {name} created"
    assert made["changes"] == {"name": name, "passwd": "x", "gid": gid, "members": []}
    assert group.present(ctx, name, gid=gid)["changes"] == {}
    moved = group.present(ctx, name, gid=gid + 1)
    assert moved["changes"] == {"Final": "All changes applied successfully"}
    assert grp.getgrnam(name).gr_gid == gid + 1
    assert group.absent(tctx, name)["result"] is None and _exists(grp.getgrnam, name)
    assert group.absent(ctx, name)["changes"] == {name: ""}
    assert not _exists(grp.getgrnam, name)
    assert group.absent(ctx, name) == {"name": name, "changes": {}, "result": True, "comment": "Group not present"}


def test_user_lifecycle(ctx, tctx, names, tmp_path):
    grp_name, name, extra = names
    group.present(ctx, grp_name)
    group.present(ctx, extra)
    uid = _free_id()
    home = str(tmp_path / "home" / name)
    os.makedirs(os.path.dirname(home))
    args = {"uid": uid, "home": home, "shell": "/bin/sh", "groups": [grp_name], "fullname": "Salt Pan"}
    predicted = user.present(tctx, name, **args)
    assert predicted["result"] is None and predicted["changes"]["uid"] == uid
    assert not _exists(pwd.getpwnam, name)
    made = user.present(ctx, name, **args)
    assert made["result"] is True, made
    assert made["comment"] == f"New user {name} created"
    entry = pwd.getpwnam(name)
    assert (entry.pw_uid, entry.pw_dir, entry.pw_shell, entry.pw_gecos) == (uid, home, "/bin/sh", "Salt Pan")
    assert os.path.isdir(home) and os.stat(home).st_uid == uid
    assert name in grp.getgrnam(grp_name).gr_mem
    assert set(made["changes"]) >= {"uid", "gid", "home", "shell", "groups", "fullname", "name"}
    again = user.present(ctx, name, **args)
    assert again["changes"] == {} and again["result"] is True

    # changes to an existing user
    plan = user.present(tctx, name, **{**args, "shell": "/bin/bash", "groups": [grp_name, extra]})
    assert plan["result"] is None and set(plan["changes"]) == {"shell", "groups"}
    assert pwd.getpwnam(name).pw_shell == "/bin/sh"
    changed = user.present(ctx, name, **{**args, "shell": "/bin/bash", "groups": [grp_name, extra]})
    assert changed["result"] is True and changed["changes"]["shell"] == "/bin/bash"
    assert name in grp.getgrnam(extra).gr_mem
    refused = user.present(ctx, name, **{**args, "uid": uid + 1})
    assert refused["result"] is False and "allow_uid_change" in refused["comment"]
    missing_group = user.present(ctx, name, groups=["no_such_group_zz"])
    assert missing_group["result"] is False and "no_such_group_zz" in missing_group["comment"]

    assert user.absent(tctx, name)["result"] is None and _exists(pwd.getpwnam, name)
    gone = user.absent(ctx, name, purge=True)
    assert gone["result"] is True and gone["changes"][name] == "removed"
    assert not _exists(pwd.getpwnam, name) and not os.path.exists(home)
    assert user.absent(ctx, name)["comment"] == f"User {name} is not present"
