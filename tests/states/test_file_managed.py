"""file.managed, file.serialize and file.copy against real temp directories."""

from __future__ import annotations

import hashlib
import json
import os

import yaml
from statehelpers import manifest, mode_of, read, write

from runtime.states import file as file_state

# --------------------------------------------------------------------------- contents


def test_new_file_from_contents_reports_diff_and_writes_lines(ctx, sandbox):
    target = os.path.join(sandbox, "simple.txt")
    ret = file_state.managed(ctx, target, contents="hello world")
    assert ret["result"] is True
    assert ret["changes"] == {"diff": "New file"}
    assert read(target) == "hello world\n"
    assert mode_of(target) == 0o644  # umask 022


def test_contents_list_and_newline_handling(ctx, sandbox):
    lines = os.path.join(sandbox, "lines.txt")
    file_state.managed(ctx, lines, contents=["first", "second"])
    assert read(lines) == "first\nsecond\n"
    nonl = os.path.join(sandbox, "nonl.txt")
    file_state.managed(ctx, nonl, contents="a\r\nb\n", contents_newline=False)
    assert read(nonl) == "a\nb"
    number = os.path.join(sandbox, "num.txt")
    file_state.managed(ctx, number, contents=42)
    assert read(number) == "42\n"


def test_new_file_mode_reporting_follows_salt(ctx, sandbox):
    # a contents file is born 0600 when a mode is wanted: 0600 needs no fix, 0640 does
    same = file_state.managed(ctx, os.path.join(sandbox, "a"), contents="x", mode="0600")
    assert same["changes"] == {"diff": "New file"}
    other = file_state.managed(ctx, os.path.join(sandbox, "b"), contents="x", mode=640)
    assert other["changes"] == {"diff": "New file", "mode": "0640"}
    assert mode_of(os.path.join(sandbox, "b")) == 0o640


def test_unchanged_file_reports_nothing(ctx, sandbox):
    target = write(os.path.join(sandbox, "same.txt"), "same content\n")
    ret = file_state.managed(ctx, target, contents="same content")
    assert ret == {"name": target, "changes": {}, "result": True,
                   "comment": f"File {target} is in the correct state"}


def test_changed_file_gets_unified_diff_and_mode(ctx, sandbox):
    target = write(os.path.join(sandbox, "existing.txt"), "old content\nkept\n")
    ret = file_state.managed(ctx, target, contents="new content\nkept", mode="0640")
    assert ret["result"] is True
    assert set(ret["changes"]) == {"diff", "mode"}
    assert ret["changes"]["diff"] == (
        "--- \n+++ \n@@ -1,2 +1,2 @@\n-old content\n+new content\n kept\n")
    assert read(target) == "new content\nkept\n"
    assert mode_of(target) == 0o640


def test_existing_mode_is_kept_when_not_given(ctx, sandbox):
    target = write(os.path.join(sandbox, "keepmode.txt"), "old\n", mode=0o600)
    ret = file_state.managed(ctx, target, contents="new")
    assert set(ret["changes"]) == {"diff"}
    assert mode_of(target) == 0o600


def test_replace_false_only_manages_permissions(ctx, sandbox):
    target = write(os.path.join(sandbox, "keep.txt"), "original\n")
    ret = file_state.managed(ctx, target, contents="would replace", replace=False, mode="0600")
    assert ret["changes"] == {"mode": "0600"}
    assert read(target) == "original\n"
    again = file_state.managed(ctx, target, contents="would replace", replace=False, mode="0600")
    assert again["changes"] == {} and again["result"] is True


def test_missing_parent_fails_without_makedirs(ctx, sandbox):
    target = os.path.join(sandbox, "missing_dir", "x.txt")
    ret = file_state.managed(ctx, target, contents="x")
    assert ret["result"] is False
    assert ret["changes"] == {}
    assert "Parent directory not present" in ret["comment"]
    assert not os.path.exists(os.path.dirname(target))


def test_makedirs_gives_parents_the_mode_with_execute_bits(ctx, sandbox):
    target = os.path.join(sandbox, "etc", "users.d", "deploy")
    ret = file_state.managed(ctx, target, contents="uid=1", makedirs=True, mode="0600")
    assert ret["result"] is True and ret["changes"] == {"diff": "New file"}
    assert mode_of(os.path.join(sandbox, "etc")) == 0o700
    assert mode_of(os.path.join(sandbox, "etc", "users.d")) == 0o700
    assert mode_of(target) == 0o600
    plain = os.path.join(sandbox, "a", "b", "c.txt")
    file_state.managed(ctx, plain, contents="x", makedirs=True)
    assert mode_of(os.path.join(sandbox, "a")) == 0o755
    explicit = os.path.join(sandbox, "d", "e.txt")
    file_state.managed(ctx, explicit, contents="x", makedirs=True, dir_mode="0750", mode="0640")
    assert mode_of(os.path.join(sandbox, "d")) == 0o750


def test_empty_file_without_contents(ctx, sandbox):
    target = os.path.join(sandbox, "empty")
    ret = file_state.managed(ctx, target)
    assert ret["changes"] == {"new": f"file {target} created"}
    assert read(target) == ""
    assert file_state.managed(ctx, target)["changes"] == {}


def test_user_and_group_ownership(ctx, sandbox):
    target = write(os.path.join(sandbox, "owned"), "o\n")
    ret = file_state.managed(ctx, target, contents="o", user="nobody", group="nogroup")
    assert ret["changes"] == {"user": "nobody", "group": "nogroup"}
    st = os.stat(target)
    import grp
    import pwd

    assert st.st_uid == pwd.getpwnam("nobody").pw_uid
    assert st.st_gid == grp.getgrnam("nogroup").gr_gid
    assert file_state.managed(ctx, target, contents="o", user="nobody", group="nogroup")["changes"] == {}


def test_unknown_user_fails_before_touching_anything(ctx, sandbox):
    target = os.path.join(sandbox, "u.txt")
    ret = file_state.managed(ctx, target, contents="x", user="no_such_user_zz")
    assert ret["result"] is False and "no_such_user_zz" in ret["comment"]
    assert not os.path.exists(target)


def test_bad_mode_is_refused_without_creating(ctx, sandbox):
    target = os.path.join(sandbox, "bad.txt")
    ret = file_state.managed(ctx, target, contents="x", mode="0999")
    assert ret["result"] is False and "0999" in ret["comment"]
    assert not os.path.exists(target)


def test_contents_pillar_and_grains(make_ctx, sandbox):
    ctx = make_ctx(pillar={"motd": "Welcome", "nested": {"key": ["a", "b"]}})
    target = os.path.join(sandbox, "motd")
    assert file_state.managed(ctx, target, contents_pillar="motd")["result"] is True
    assert read(target) == "Welcome\n"
    nested = os.path.join(sandbox, "nested")
    file_state.managed(ctx, nested, contents_pillar="nested:key:1")
    assert read(nested) == "b\n"
    missing = file_state.managed(ctx, os.path.join(sandbox, "m"), contents_pillar="no:such")
    assert missing["result"] is False and "Pillar no:such does not exist" in missing["comment"]
    grains = os.path.join(sandbox, "grain")
    file_state.managed(ctx, grains, contents_grains="os")
    assert read(grains) == "Debian\n"


def test_conflicting_content_arguments(ctx, sandbox):
    ret = file_state.managed(ctx, os.path.join(sandbox, "x"), source="salt://x", contents="y")
    assert ret["result"] is False and "'source' cannot be used" in ret["comment"]


def test_directory_target_and_relative_name_fail(ctx, sandbox):
    assert file_state.managed(ctx, sandbox, contents="x")["result"] is False
    assert "absolute" in file_state.managed(ctx, "relative.txt", contents="x")["comment"]


def test_create_false_leaves_missing_file_alone(ctx, sandbox):
    target = os.path.join(sandbox, "nocreate")
    ret = file_state.managed(ctx, target, contents="x", create=False)
    assert ret["result"] is True and ret["changes"] == {}
    assert not os.path.exists(target)


def test_symlink_target_is_written_through_unless_follow_symlinks_false(ctx, sandbox):
    real = write(os.path.join(sandbox, "real.txt"), "real\n")
    link = os.path.join(sandbox, "link.txt")
    os.symlink(real, link)
    file_state.managed(ctx, link, contents="via link")
    assert os.path.islink(link) and read(real) == "via link\n"
    ret = file_state.managed(ctx, link, contents="plain now", follow_symlinks=False)
    assert set(ret["changes"]) == {"diff"}
    assert not os.path.islink(link) and read(link) == "plain now\n"
    assert read(real) == "via link\n"


def test_check_cmd_blocks_bad_content(ctx, sandbox):
    target = write(os.path.join(sandbox, "checked.conf"), "good\n")
    ret = file_state.managed(ctx, target, contents="bad", check_cmd="grep -q good")
    assert ret["result"] is False and "check_cmd" in ret["comment"]
    assert read(target) == "good\n"
    ok = file_state.managed(ctx, target, contents="good too", check_cmd="grep -q good")
    assert ok["result"] is True and read(target) == "good too\n"


def test_backup_minion_keeps_old_copy(ctx, sandbox, tmp_path):
    target = write(os.path.join(sandbox, "b.conf"), "v1\n")
    file_state.managed(ctx, target, contents="v2", backup="minion")
    backup_dir = os.path.join(str(tmp_path / "cache"), "file_backup", os.path.dirname(target).lstrip("/"))
    copies = os.listdir(backup_dir)
    assert len(copies) == 1 and copies[0].startswith("b.conf_")
    assert read(os.path.join(backup_dir, copies[0])) == "v1\n"


# --------------------------------------------------------------------------- test mode


def test_test_mode_changes_nothing_and_predicts(tctx, sandbox):
    write(os.path.join(sandbox, "existing_diff.txt"), "old content\n")
    write(os.path.join(sandbox, "existing_same.txt"), "same content\n")
    write(os.path.join(sandbox, "keep.txt"), "original\n")
    before = manifest(sandbox)
    new = file_state.managed(tctx, os.path.join(sandbox, "new.txt"), contents="x", mode="0600")
    deep = file_state.managed(tctx, os.path.join(sandbox, "a", "b.txt"), contents="x")  # no makedirs
    changed = file_state.managed(tctx, os.path.join(sandbox, "existing_diff.txt"), contents="new content",
                                 mode="0640")
    same = file_state.managed(tctx, os.path.join(sandbox, "existing_same.txt"), contents="same content")
    keep = file_state.managed(tctx, os.path.join(sandbox, "keep.txt"), contents="x", replace=False)
    assert manifest(sandbox) == before
    assert (new["result"], list(new["changes"])) == (None, ["newfile"])
    assert (deep["result"], list(deep["changes"])) == (None, ["newfile"])
    assert changed["result"] is None and set(changed["changes"]) == {"diff", "mode"}
    assert "-old content\n+new content\n" in changed["changes"]["diff"]
    assert (same["result"], same["changes"]) == (True, {})
    assert (keep["result"], keep["changes"]) == (True, {})


# --------------------------------------------------------------------------- source


def test_source_copy_reports_diff_and_mode(ctx, roots, sandbox):
    write(os.path.join(roots, "files", "plain.txt"), "plain file, {{ not rendered }}\n")
    target = os.path.join(sandbox, "plain.txt")
    ret = file_state.managed(ctx, target, source="salt://files/plain.txt")
    assert ret["result"] is True and set(ret["changes"]) == {"diff", "mode"}
    assert read(target) == "plain file, {{ not rendered }}\n"
    assert mode_of(target) == 0o644
    assert file_state.managed(ctx, target, source="salt://files/plain.txt")["changes"] == {}


def test_source_template_with_context_and_defaults(ctx, roots, sandbox):
    write(os.path.join(roots, "app.conf.j2"), "id={{ grains['id'] }} listen={{ listen }}:{{ port }}\n")
    target = os.path.join(sandbox, "app.conf")
    ret = file_state.managed(ctx, target, source="salt://app.conf.j2", template="jinja",
                             context={"listen": "127.0.0.1"}, defaults={"listen": "0.0.0.0", "port": 8080})
    assert ret["result"] is True
    assert read(target) == "id=minion1 listen=127.0.0.1:8080\n"


def test_source_list_first_existing_wins_and_missing_fails(ctx, roots, sandbox):
    write(os.path.join(roots, "fallback.txt"), "fallback used\n")
    target = os.path.join(sandbox, "fallback.txt")
    ret = file_state.managed(ctx, target, source=["salt://nope.txt", "salt://fallback.txt"])
    assert ret["result"] is True and read(target) == "fallback used\n"
    missing = file_state.managed(ctx, os.path.join(sandbox, "m.txt"), source="salt://nope.txt")
    assert missing["result"] is False and "salt://nope.txt" in missing["comment"]


def test_template_error_is_a_clear_failure(ctx, roots, sandbox):
    write(os.path.join(roots, "broken.j2"), "{{ undefined_variable }}\n")
    ret = file_state.managed(ctx, os.path.join(sandbox, "b"), source="salt://broken.j2", template="jinja")
    assert ret["result"] is False and "undefined_variable" in ret["comment"]
    assert not os.path.exists(os.path.join(sandbox, "b"))


def test_source_hash_is_verified(ctx, roots, sandbox):
    data = b"payload\n"
    src = write(os.path.join(roots, "payload"), data.decode())
    good = hashlib.sha256(data).hexdigest()
    target = os.path.join(sandbox, "payload")
    bad = file_state.managed(ctx, target, source=src, source_hash="sha256=" + "0" * 64)
    assert bad["result"] is False and "does not match" in bad["comment"]
    assert not os.path.exists(target)
    ok = file_state.managed(ctx, target, source=src, source_hash=good)
    assert ok["result"] is True and read(target) == "payload\n"
    write(os.path.join(roots, "payload.sha256"), f"{good}  payload\n{'1' * 64}  other\n")
    by_file = file_state.managed(ctx, os.path.join(sandbox, "p2"), source="salt://payload",
                                 source_hash="salt://payload.sha256")
    assert by_file["result"] is True


def test_keep_mode_copies_source_mode(ctx, roots, sandbox):
    write(os.path.join(roots, "run.sh"), "#!/bin/sh\n", mode=0o755)
    target = os.path.join(sandbox, "run.sh")
    file_state.managed(ctx, target, source="salt://run.sh", mode="keep")
    assert mode_of(target) == 0o755


# --------------------------------------------------------------------------- serialize / copy


def test_serialize_json_and_yaml(ctx, sandbox):
    out = os.path.join(sandbox, "out.json")
    ret = file_state.serialize(ctx, out, dataset={"b": [1, 2], "a": {"z": "ü"}}, serializer="json")
    assert ret["result"] is True and ret["changes"] == {"diff": "New file"}
    assert read(out) == json.dumps({"a": {"z": "ü"}, "b": [1, 2]}, indent=2, sort_keys=True,
                                   ensure_ascii=False) + "\n"
    assert file_state.serialize(ctx, out, dataset={"a": {"z": "ü"}, "b": [1, 2]}, formatter="json")["changes"] == {}
    out_yaml = os.path.join(sandbox, "out.yaml")
    file_state.serialize(ctx, out_yaml, dataset={"b": [1, 2], "a": True})
    assert yaml.safe_load(read(out_yaml)) == {"a": True, "b": [1, 2]}
    assert read(out_yaml) == "a: true\nb:\n- 1\n- 2\n"


def test_serialize_dataset_pillar_and_merge(make_ctx, sandbox):
    ctx = make_ctx(pillar={"logging": {"level": "info"}})
    out = os.path.join(sandbox, "logging.json")
    file_state.serialize(ctx, out, dataset_pillar="logging", serializer="json")
    assert json.loads(read(out)) == {"level": "info"}
    merged = file_state.serialize(ctx, out, dataset={"format": "x"}, serializer="json", merge_if_exists=True)
    assert merged["changes"]["diff"] == {"format": {"new": "x", "old": "<_null_>"}}
    assert json.loads(read(out)) == {"level": "info", "format": "x"}
    none = file_state.serialize(ctx, os.path.join(sandbox, "n.json"), serializer="json")
    assert none["result"] is False


def test_copy(ctx, tctx, sandbox):
    src = write(os.path.join(sandbox, "src.txt"), "src", mode=0o640)
    dst = os.path.join(sandbox, "dst.txt")
    before = manifest(sandbox)
    assert file_state.copy(tctx, dst, source=src)["result"] is None
    assert manifest(sandbox) == before
    ret = file_state.copy(ctx, dst, source=src)
    assert ret["changes"] == {dst: src} and read(dst) == "src" and mode_of(dst) == 0o640
    write(dst, "changed")
    assert file_state.copy(ctx, dst, source=src)["changes"] == {}
    assert read(dst) == "changed"
    assert file_state.copy(ctx, dst, source=src, force=True)["changes"] == {dst: src}
    assert read(dst) == "src"
