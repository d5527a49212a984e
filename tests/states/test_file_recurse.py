"""file.recurse for real in a sandbox (Salt parity of its results: parity_scenarios.yaml "recurse"),
and what templates in file states see."""

from __future__ import annotations

import os
import pwd

from statehelpers import manifest, mode_of, read, write

from runtime.states import file


def _tree(roots: str) -> None:
    write(os.path.join(roots, "app/conf/main.conf"), "port={{ port }}\n")
    write(os.path.join(roots, "app/conf/extra/x.conf"), "x\n")
    write(os.path.join(roots, "app/conf/notes.bak"), "skip\n")
    write(os.path.join(roots, "other/o.txt"), "o\n")


def test_recurse_copies_renders_and_is_idempotent(ctx, tctx, roots, sandbox):
    _tree(roots)
    dest = os.path.join(sandbox, "etc/app")
    args = {"source": "salt://app/conf", "template": "jinja", "defaults": {"port": 80}, "context": {"port": 8080},
            "file_mode": "0640", "dir_mode": "0750", "exclude_pat": "*.bak"}
    before = manifest(sandbox)
    ret = file.recurse(tctx, dest, **args)
    assert ret["result"] is None and manifest(sandbox) == before
    assert set(ret["changes"]) == {dest, f"{dest}/main.conf", f"{dest}/extra", f"{dest}/extra/x.conf"}
    ret = file.recurse(ctx, dest, **args)
    assert ret["result"] is True and ret["comment"] == f"Recursively updated {dest}"
    assert read(f"{dest}/main.conf") == "port=8080\n"
    assert mode_of(f"{dest}/main.conf") == 0o640 and mode_of(f"{dest}/extra") == 0o750
    assert not os.path.exists(f"{dest}/notes.bak")
    again = file.recurse(ctx, dest, **args)
    assert again == {"name": dest, "changes": {}, "result": True,
                     "comment": f"The directory {dest} is in the correct state"}
    assert file.recurse(tctx, dest, **args)["changes"] == {}


def test_recurse_clean_removes_what_the_source_lacks(ctx, tctx, roots, sandbox):
    _tree(roots)
    dest = os.path.join(sandbox, "d")
    write(f"{dest}/stale.txt", "old\n")
    write(f"{dest}/olddir/y.txt", "old\n")
    write(f"{dest}/keep.log", "log\n")
    ret = file.recurse(tctx, dest, source="salt://other", clean=True, exclude_pat="*.log")
    assert ret["result"] is None and os.path.exists(f"{dest}/stale.txt")
    assert "#### removed ####" in ret["comment"] and f"{dest}/olddir/y.txt" in ret["comment"]
    ret = file.recurse(ctx, dest, source="salt://other", clean=True, exclude_pat="*.log")
    assert ret["changes"]["removed"] == [f"{dest}/olddir", f"{dest}/stale.txt"]
    assert sorted(os.listdir(dest)) == ["keep.log", "o.txt"]
    assert file.recurse(ctx, dest, source="salt://other", clean=True, exclude_pat="*.log")["changes"] == {}


def test_recurse_failures(ctx, roots, sandbox):
    _tree(roots)
    ret = file.recurse(ctx, os.path.join(sandbox, "x"), source="salt://nope")
    assert (ret["result"], ret["comment"]) == (False, "Recurse failed: none of the specified sources were found")
    ret = file.recurse(ctx, os.path.join(sandbox, "x"), source="/etc")
    assert ret["comment"] == "Recurse failed: Invalid source '/etc' (must be a salt:// URI)"
    ret = file.recurse(ctx, os.path.join(sandbox, "x"), source="salt://other", mode="0644")
    assert ret["comment"] == "'mode' is not allowed in 'file.recurse'. Please use 'file_mode' and 'dir_mode'."
    write(os.path.join(sandbox, "afile"), "x")
    ret = file.recurse(ctx, os.path.join(sandbox, "afile"), source="salt://other")
    assert ret["comment"] == f"The path {sandbox}/afile exists and is not a directory"
    assert file.recurse(ctx, os.path.join(sandbox, "ff"), source=["salt://nope", "salt://other"])["result"] is True
    assert read(os.path.join(sandbox, "ff/o.txt")) == "o\n"


def test_managed_templates_see_what_salt_passes(ctx, roots, sandbox):
    """Captured from Salt 3008.3: a source template sees source (with ?saltenv when file.recurse made it),
    name, user, group, mode (as normalised), attrs and saltenv, under defaults and context; sls, slspath
    and tpldir are not passed (formulas put tpldir in context themselves)."""
    user = pwd.getpwuid(os.getuid()).pw_name
    write(os.path.join(roots, "t.j2"), "{{ source }}|{{ name }}|{{ user }}|{{ group }}|{{ mode }}|{{ attrs }}|"
                                       "{{ x }}|{{ sls is defined }}|{{ tpldir is defined }}\n")
    dest = os.path.join(sandbox, "out")
    ret = file.managed(ctx, dest, source="salt://t.j2", template="jinja", user=user, mode=640,
                       defaults={"x": 1, "name": "overridden-by-nothing"}, context={"x": 2})
    assert ret["result"] is True
    assert read(dest) == f"salt://t.j2|overridden-by-nothing|{user}|None|0640|None|2|False|False\n"
    ret = file.managed(ctx, dest, source="salt://t.j2", template="jinja", user=user, mode=640, context={"x": 3})
    assert read(dest) == f"salt://t.j2|{dest}|{user}|None|0640|None|3|False|False\n"
