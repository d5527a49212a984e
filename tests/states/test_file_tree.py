"""file.directory, file.absent, file.symlink, file.touch, file.exists, file.missing."""

from __future__ import annotations

import os

from statehelpers import manifest, mode_of, read, write

from runtime.states import file as file_state


def test_directory_new_and_makedirs_parents_get_same_mode(ctx, sandbox):
    target = os.path.join(sandbox, "a", "b", "c")
    ret = file_state.directory(ctx, target, makedirs=True, dir_mode="0700")
    assert ret["result"] is True
    assert ret["changes"] == {target: {"directory": "new"}}
    for sub in ("a", "a/b", "a/b/c"):
        assert mode_of(os.path.join(sandbox, sub)) == 0o700
    assert file_state.directory(ctx, target, makedirs=True, dir_mode="0700")["changes"] == {}


def test_directory_mode_alias_and_missing_parent(ctx, sandbox):
    target = os.path.join(sandbox, "m")
    file_state.directory(ctx, target, mode=750)
    assert mode_of(target) == 0o750
    ret = file_state.directory(ctx, os.path.join(sandbox, "x", "y"))
    assert ret["result"] is False and "No directory to create" in ret["comment"]
    assert not os.path.exists(os.path.join(sandbox, "x"))


def test_directory_fixes_mode_of_existing(ctx, sandbox):
    target = os.path.join(sandbox, "exists")
    os.mkdir(target)
    os.chmod(target, 0o700)
    ret = file_state.directory(ctx, target, mode="0755")
    assert ret["changes"] == {target: {"mode": "0755"}, "mode": "0755"}
    assert mode_of(target) == 0o755


def test_directory_refuses_a_file_unless_forced(ctx, sandbox):
    target = write(os.path.join(sandbox, "afile"), "x")
    ret = file_state.directory(ctx, target)
    assert ret["result"] is False and "exists and is a file" in ret["comment"]
    forced = file_state.directory(ctx, target, force=True)
    assert forced["result"] is True and os.path.isdir(target)
    assert forced["changes"]["forced"] == "File was forcibly replaced"


def test_directory_recurse_modes(ctx, sandbox):
    tree = os.path.join(sandbox, "tree")
    write(os.path.join(tree, "a.txt"), "a", mode=0o600)
    write(os.path.join(tree, "sub", "b.txt"), "b", mode=0o600)
    os.chmod(os.path.join(tree, "sub"), 0o700)
    ret = file_state.directory(ctx, tree, file_mode="0644", dir_mode="0755", recurse=["mode"])
    assert ret["result"] is True
    assert os.path.join(tree, "a.txt") in ret["changes"]
    assert mode_of(os.path.join(tree, "a.txt")) == 0o644
    assert mode_of(os.path.join(tree, "sub")) == 0o755
    assert mode_of(os.path.join(tree, "sub", "b.txt")) == 0o644
    bad = file_state.directory(ctx, tree, recurse=["colour"])
    assert bad["result"] is False


def test_directory_clean_keeps_required_files(make_ctx, sandbox):
    keep = write(os.path.join(sandbox, "clean", "keep.txt"), "k")
    write(os.path.join(sandbox, "clean", "junk.txt"), "j")
    write(os.path.join(sandbox, "clean", "junkdir", "x"), "x")
    lowstate = [{"state": "file", "__id__": "keep_me", "name": keep, "fun": "managed"}]
    ctx = make_ctx(lowstate=lowstate, low={"require": [{"file": "keep_me"}]})
    target = os.path.join(sandbox, "clean")
    test_ret = file_state.directory(make_ctx(test=True, lowstate=lowstate, low={"require": [{"file": "keep_me"}]}),
                                    target, clean=True)
    assert test_ret["result"] is None and keep not in test_ret["changes"]
    ret = file_state.directory(ctx, target, clean=True)
    assert sorted(ret["changes"]["removed"]) == sorted(
        [os.path.join(target, "junk.txt"), os.path.join(target, "junkdir")])
    assert sorted(os.listdir(target)) == ["keep.txt"]


def test_directory_test_mode_predicts_without_creating(tctx, sandbox):
    target = os.path.join(sandbox, "etc")
    before = manifest(sandbox)
    ret = file_state.directory(tctx, target, makedirs=True)
    assert ret["result"] is None and ret["changes"] == {target: {"directory": "new"}}
    assert manifest(sandbox) == before


def test_absent(ctx, tctx, sandbox):
    f = write(os.path.join(sandbox, "f.txt"), "x")
    d = os.path.join(sandbox, "d")
    write(os.path.join(d, "inner"), "x")
    before = manifest(sandbox)
    assert file_state.absent(tctx, f) == {"name": f, "changes": {"removed": f}, "result": None,
                                          "comment": f"File {f} is set for removal"}
    assert manifest(sandbox) == before
    assert file_state.absent(ctx, f)["changes"] == {"removed": f}
    assert file_state.absent(ctx, d)["changes"] == {"removed": d}
    assert os.listdir(sandbox) == []
    assert file_state.absent(ctx, f)["changes"] == {}
    assert file_state.absent(ctx, "/")["result"] is False
    assert file_state.absent(ctx, "relative")["result"] is False


def test_exists_missing(ctx, sandbox):
    assert file_state.exists(ctx, sandbox)["result"] is True
    assert file_state.exists(ctx, os.path.join(sandbox, "no"))["result"] is False
    assert file_state.missing(ctx, os.path.join(sandbox, "no"))["result"] is True
    assert file_state.missing(ctx, sandbox)["result"] is False


def test_touch(ctx, tctx, sandbox):
    target = os.path.join(sandbox, "t.txt")
    assert file_state.touch(tctx, target)["changes"] == {"new": target}
    assert not os.path.exists(target)
    assert file_state.touch(ctx, target)["changes"] == {"new": target}
    assert file_state.touch(ctx, target, mtime=1000)["changes"] == {"touched": target}
    assert int(os.stat(target).st_mtime) == 1000
    deep = os.path.join(sandbox, "x", "y.txt")
    assert file_state.touch(ctx, deep)["result"] is False
    assert file_state.touch(ctx, deep, makedirs=True)["changes"] == {"new": deep}


def test_symlink_create_correct_and_retarget(ctx, tctx, sandbox):
    target = write(os.path.join(sandbox, "target.txt"), "t")
    link = os.path.join(sandbox, "link")
    predicted = file_state.symlink(tctx, link, target=target)
    assert predicted["result"] is None and predicted["changes"] == {"new": link}
    assert not os.path.lexists(link)
    assert file_state.symlink(ctx, link, target=target)["changes"] == {"new": link}
    assert os.readlink(link) == target
    assert file_state.symlink(ctx, link, target=target)["changes"] == {}
    other = write(os.path.join(sandbox, "other.txt"), "o")
    assert file_state.symlink(tctx, link, target=other)["changes"] == {"change": link}
    assert file_state.symlink(ctx, link, target=other)["changes"] == {"new": link}
    assert os.readlink(link) == other


def test_symlink_blocked_by_file_force_and_backup(ctx, sandbox):
    target = write(os.path.join(sandbox, "target.txt"), "t")
    blocker = write(os.path.join(sandbox, "blocker"), "b")
    ret = file_state.symlink(ctx, blocker, target=target)
    assert ret["result"] is False and read(blocker) == "b"
    assert file_state.symlink(ctx, blocker, target=target, force=True)["result"] is True
    assert os.readlink(blocker) == target
    blockdir = os.path.join(sandbox, "blockdir")
    write(os.path.join(blockdir, "x"), "x")
    ret = file_state.symlink(ctx, blockdir, target=target, backupname="blockdir.bak")
    assert ret["result"] is True and os.path.islink(blockdir)
    assert read(os.path.join(sandbox, "blockdir.bak", "x")) == "x"


def test_symlink_makedirs(ctx, sandbox):
    link = os.path.join(sandbox, "l", "m", "n")
    assert file_state.symlink(ctx, link, target="/etc")["result"] is False
    assert file_state.symlink(ctx, link, target="/etc", makedirs=True)["changes"] == {"new": link}
    assert os.readlink(link) == "/etc"
