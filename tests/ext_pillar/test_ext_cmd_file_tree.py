"""cmd_json, cmd_yaml and file_tree: options beyond the conformance corpus, and their errors."""

from __future__ import annotations

import os
import time

import pytest
from ext_pillar_helpers import compile_pillar, make_opts, write_tree

from ext_pillar import DriverError, cmd_json, cmd_yaml, file_tree

# -- cmd_json / cmd_yaml ------------------------------------------------------------------


def test_cmd_json_replaces_every_percent_s_and_leaves_other_percents(tmp_path):
    out = cmd_json.ext_pillar("web01", {}, "printf '{\"a\": \"%s\", \"b\": \"%s\", \"pct\": \"%%d\"}'")
    assert out == {"a": "web01", "b": "web01", "pct": "%d"}


def test_cmd_yaml_loads_like_salt(tmp_path):
    out = cmd_yaml.ext_pillar("web01", {}, "printf 'mode: 0755\\nwhen: 2024-01-02\\nid: %s\\n'")
    assert out == {"mode": 755, "when": "2024-01-02", "id": "web01"}


def test_cmd_yaml_empty_output_is_empty_pillar():
    assert cmd_yaml.ext_pillar("web01", {}, "true") == {}


@pytest.mark.parametrize(("driver", "command", "message"), [
    (cmd_json, "echo '{bad'", "the output of \"echo '{bad'\" is not JSON: Expecting property name enclosed in "
                              "double quotes at line 1 column 2"),
    (cmd_json, "echo '[1, 2]'", "the output of \"echo '[1, 2]'\" is a JSON array, not an object"),
    (cmd_json, "true", "the output of 'true' is empty (a JSON object was expected)"),
    (cmd_yaml, "echo '- a'", "the output of \"echo '- a'\" is a YAML list, not a mapping"),
    (cmd_json, "echo oops >&2; exit 3", "command 'echo oops >&2; exit 3' exited with status 3: oops"),
])
def test_command_errors(driver, command, message):
    with pytest.raises(DriverError) as info:
        driver.ext_pillar("web01", {}, command)
    assert info.value.message == message


def test_cmd_yaml_syntax_error_names_the_line():
    with pytest.raises(DriverError) as info:
        cmd_yaml.ext_pillar("web01", {}, "printf 'a: 1\\nb: [1\\n'")
    # the rest of the text is the YAML parser's own wording
    assert info.value.message.startswith("the output of \"printf 'a: 1\\\\nb: [1\\\\n'\" is not YAML at line 3: ")


def test_command_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "survived"
    started = time.monotonic()
    with pytest.raises(DriverError) as info:
        cmd_json.ext_pillar("web01", {}, f"(sleep 2; touch {marker}) & sleep 3; echo '{{}}'", timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert info.value.message == (f"command \"(sleep 2; touch {marker}) & sleep 3; echo '{{}}'\" did not finish "
                                  "within 0.3 s and was killed")
    time.sleep(2.2)
    assert not marker.exists()


def test_command_is_bounded_by_ext_pillar_timeout(tmp_path):
    opts = make_opts(tmp_path, ext_pillar=[{"cmd_json": "sleep 5; echo '{}'"}], ext_pillar_timeout=0.3)
    started = time.monotonic()
    result = compile_pillar(opts, "web01")
    assert time.monotonic() - started < 1.5
    assert len(result.pillar["_errors"]) == 1
    assert result.pillar["_errors"][0].startswith("Failed to load ext_pillar cmd_json for minion web01: ")


def test_unsafe_minion_id_never_reaches_a_shell(tmp_path):
    with pytest.raises(DriverError) as info:
        cmd_json.ext_pillar("x;touch pwned", {}, f"cd {tmp_path} && echo '{{\"id\": \"%s\"}}'")
    assert info.value.message == ("refusing to put the minion id 'x;touch pwned' into a shell command: it holds "
                                  "characters a shell would interpret")
    assert not (tmp_path / "pwned").exists()


def test_cmd_options_form_and_bad_timeout(tmp_path):
    opts = make_opts(tmp_path, ext_pillar=[{"cmd_json": {"command": "echo '{\"x\": 1}'", "timeout": 5}},
                                           {"cmd_yaml": {"command": "echo 'y: 2'", "timeout": "soon"}}])
    result = compile_pillar(opts, "web01")
    assert result.pillar == {"x": 1, "_errors": [
        "Failed to load ext_pillar cmd_yaml for minion web01: timeout must be a positive number of seconds, "
        "got 'soon'"]}


def test_invalid_json_in_a_full_compile_is_one_error(tmp_path):
    write_tree(tmp_path / "pillar", {"top.sls": "base:\n  '*':\n    - a\n", "a.sls": "a: 1\n"})
    opts = make_opts(tmp_path, ext_pillar=[{"cmd_json": "echo 'not json'"}])
    result = compile_pillar(opts, "web01")
    assert result.pillar == {"a": 1, "_errors": [
        "Failed to load ext_pillar cmd_json for minion web01: the output of \"echo 'not json'\" is not JSON: "
        "Expecting value at line 1 column 1"]}


# -- file_tree ----------------------------------------------------------------------------


def _tree(root):
    write_tree(root, {
        "hosts/web01/greeting": "hello\n",
        "hosts/web01/conf/port": "8080\n",
        "hosts/web01/certs/site.pem": "-----BEGIN-----\n",
        "hosts/web01/motd": "top level\n",
        "nodegroups/webs/group_file": "from group\n",
        "nodegroups/webs/greeting": "group greeting\n",
        "nodegroups/dbs/db_only": "no\n",
    })
    (root / "hosts" / "web01" / "empty").mkdir()


def test_file_tree_shape_and_empty_dirs(tmp_path):
    _tree(tmp_path / "tree")
    out = file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"), keep_newline=["certs/*"])
    assert out == {"greeting": "hello", "conf": {"port": "8080"}, "certs": {"site.pem": "-----BEGIN-----\n"},
                   "motd": "top level", "empty": {}}


@pytest.mark.parametrize(("keep", "motd", "port"), [
    (True, "top level\n", "8080\n"),
    (False, "top level", "8080"),
    (["motd"], "top level\n", "8080"),
    (["./motd"], "top level\n", "8080"),  # Salt's own spelling for files at the top
    ("conf/*", "top level", "8080\n"),
])
def test_keep_newline_forms(tmp_path, keep, motd, port):
    _tree(tmp_path / "tree")
    out = file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"), keep_newline=keep)
    assert (out["motd"], out["conf"]["port"]) == (motd, port)


def test_keep_newline_must_be_bool_or_globs(tmp_path):
    with pytest.raises(DriverError) as info:
        file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path), keep_newline={"a": 1})
    assert info.value.message == "keep_newline must be true, false or a list of file globs, got {'a': 1}"


def test_nodegroups_apply_on_a_master_only(tmp_path):
    _tree(tmp_path / "tree")
    base = {"nodegroups": {"webs": "web*", "dbs": "G@role:db"}}
    minion_opts = make_opts(tmp_path, **base)
    master_opts = make_opts(tmp_path, role="master", **base)
    as_minion = file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"), opts=minion_opts)
    as_master = file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"), opts=master_opts,
                                     grains={"role": "web"})
    assert "group_file" not in as_minion
    assert as_master["group_file"] == "from group"
    assert as_master["greeting"] == "hello"  # host data wins over nodegroup data
    assert "db_only" not in as_master


def test_relative_root_dir_merges_every_root_of_the_pillarenv(tmp_path):
    write_tree(tmp_path / "p1", {"ext/hosts/web01/a": "1", "ext/hosts/web01/both": "p1"})
    write_tree(tmp_path / "p2", {"ext/hosts/web01/b": "2", "ext/hosts/web01/both": "p2"})
    write_tree(tmp_path / "dev", {"ext/hosts/web01/dev": "d"})
    roots = {"base": [str(tmp_path / "p1"), str(tmp_path / "p2")], "dev": [str(tmp_path / "dev")]}
    opts = make_opts(tmp_path, pillar_roots=roots)
    assert file_tree.ext_pillar("web01", {}, root_dir="ext", opts=opts) == {"a": "1", "b": "2", "both": "p2"}
    opts["pillarenv"] = "dev"
    assert file_tree.ext_pillar("web01", {}, root_dir="ext", opts=opts) == {"dev": "d"}
    opts["pillarenv"] = "qa"
    with pytest.raises(DriverError) as info:
        file_tree.ext_pillar("web01", {}, root_dir="ext", opts=opts)
    assert info.value.message == ("root_dir 'ext' is relative but pillar_roots has no 'qa' environment to "
                                  "resolve it against")


def test_template_renders_files_with_grains_pillar_and_shebangs(tmp_path):
    write_tree(tmp_path / "tree", {
        "hosts/web01/plain": "role={{ grains['role'] }} from {{ pillar['src'] }}\n",
        "hosts/web01/data": "ports: [{{ 80 }}, 443]\n",
        "hosts/web01/raw": "#!yaml\nkey: '{{ not rendered }}'\n",
    })
    out = file_tree.ext_pillar("web01", {"src": "sls"}, root_dir=str(tmp_path / "tree"), template=True,
                               opts=make_opts(tmp_path), grains={"role": "web"})
    assert out == {"plain": "role=web from sls", "data": {"ports": [80, 443]}, "raw": {"key": "{{ not rendered }}"}}
    only_jinja = file_tree.ext_pillar("web01", {"src": "sls"}, root_dir=str(tmp_path / "tree"), template=True,
                                      render_default="jinja", opts=make_opts(tmp_path), grains={"role": "web"})
    assert only_jinja["data"] == "ports: [80, 443]"


def test_template_errors_name_the_file(tmp_path):
    write_tree(tmp_path / "tree", {"hosts/web01/bad": "line one\n{{ grains['nope'] }}\n"})
    path = str(tmp_path / "tree" / "hosts" / "web01" / "bad")
    opts = make_opts(tmp_path, ext_pillar=[{"file_tree": {"root_dir": str(tmp_path / "tree"), "template": True}}])
    result = compile_pillar(opts, "web01", grains={"id": "web01"})
    assert len(result.pillar["_errors"]) == 1
    message = result.pillar["_errors"][0]
    assert message.startswith(f"Failed to load ext_pillar file_tree for minion web01: rendering {path} failed: ")
    assert message.endswith(f"Jinja variable 'dict object' has no attribute 'nope' ({path}:2)")


def test_template_renderer_blacklist(tmp_path):
    write_tree(tmp_path / "tree", {"hosts/web01/f": "a: 1\n"})
    with pytest.raises(Exception) as info:
        file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"), template=True,
                             renderer_blacklist=["yaml"], opts=make_opts(tmp_path))
    assert "renderer 'yaml' is disabled by renderer_blacklist/renderer_whitelist" in str(info.value)


def test_binary_files_stay_bytes_and_outside_links_are_skipped(tmp_path):
    write_tree(tmp_path / "tree", {"hosts/web01/text": "t"})
    (tmp_path / "tree" / "hosts" / "web01" / "blob").write_bytes(b"\xff\xfe\x00\n")
    (tmp_path / "secret").write_text("do not read")
    os.symlink(tmp_path / "secret", tmp_path / "tree" / "hosts" / "web01" / "link")
    out = file_tree.ext_pillar("web01", {}, root_dir=str(tmp_path / "tree"))
    assert out == {"text": "t", "blob": b"\xff\xfe\x00"}


def test_minion_id_cannot_leave_the_tree(tmp_path):
    with pytest.raises(DriverError):
        file_tree.ext_pillar("../etc", {}, root_dir=str(tmp_path))
