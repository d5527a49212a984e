"""file.comment / file.uncomment in a sandbox (Salt parity: parity_scenarios.yaml "comment")."""

from __future__ import annotations

import os

from statehelpers import manifest, mode_of, read, write

from runtime.states import file


def test_comment_then_uncomment_round_trip(ctx, tctx, sandbox):
    path = write(os.path.join(sandbox, "pg.conf"), "port = 5432\nlisten = '*'\n", 0o640)
    before = manifest(sandbox)
    ret = file.comment(tctx, path, "^port")
    assert ret == {"name": path, "changes": {path: "updated"}, "result": None,
                   "comment": f"File {path} is set to be updated"}
    assert manifest(sandbox) == before
    ret = file.comment(ctx, path, "^port")
    assert (ret["result"], ret["comment"]) == (True, "Commented lines successfully")
    assert ret["changes"]["diff"].endswith("-port = 5432\n+#port = 5432\n listen = '*'\n")
    assert read(path) == "#port = 5432\nlisten = '*'\n" and mode_of(path) == 0o640
    assert read(path + ".bak") == "port = 5432\nlisten = '*'\n"
    again = file.comment(ctx, path, "^port")
    assert (again["result"], again["changes"], again["comment"]) == (True, {}, "Pattern already commented")
    ret = file.uncomment(ctx, path, "port", backup=False)
    assert ret["result"] is True and read(path) == "port = 5432\nlisten = '*'\n"
    assert file.uncomment(ctx, path, "port")["comment"] == "Pattern already uncommented"
    assert file.uncomment(tctx, path, "port")["changes"] == {}


def test_comment_errors(ctx, sandbox):
    path = write(os.path.join(sandbox, "x.conf"), "a = 1\n")
    assert file.comment(ctx, path, "^b")["comment"] == "b: Pattern not found"
    assert file.comment(ctx, path, "^b", ignore_missing=True)["result"] is True
    assert file.comment(ctx, os.path.join(sandbox, "nope"), "a")["comment"] == f"{sandbox}/nope: file not found"
    assert file.uncomment(ctx, "relative.conf", "a")["comment"] == (
        "Specified file relative.conf is not an absolute path")
    assert file.comment(ctx, path, "(")["result"] is False
