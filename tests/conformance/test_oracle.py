"""Self-tests of the conformance runner: materialisation, normalisation, manifest, reports."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest
import yaml

from tests.conformance import oracle

PAIRS = [("/tmp/x/sandbox", "@SANDBOX@"), ("/tmp/x/case", "@CASEDIR@"), ("/tmp/x", "@RUNDIR@")]


def _cases_with(filename: str) -> list[oracle.Case]:
    cases = [oracle.load_case(n) for n in oracle.case_names()]
    return [c for c in cases if c.expected(filename) is not None]


# -- normalisation reproduces expected/ from Salt-shaped raw output ------------------------------

@pytest.mark.parametrize("case", _cases_with("salt_messages.json"), ids=lambda c: c.name)
def test_salt_shaped_errors_normalise_to_expected(case: oracle.Case) -> None:
    """Rebuild what salt-call printed from expected/ + salt_messages.json and normalise it back."""
    messages = case.expected("salt_messages.json")
    checked = 0
    for check, salt_messages in messages.items():
        expected = case.expected(f"{check}.json")
        if check == "pillar":
            raw = {k: v for k, v in expected.items() if k != "_errors"}
            raw["_errors"] = salt_messages
        elif expected == {"__errors__": oracle.error_kinds(salt_messages)}:
            raw = salt_messages  # a compile error: salt-call returns the list of messages
        else:
            continue
        stdout = json.dumps({"local": raw}, indent=4)
        assert oracle.normalise(check, stdout, "", PAIRS) == expected
        checked += 1
    assert checked


def test_wrapped_pillar_with_paths_and_errors() -> None:
    stdout = json.dumps({"local": {
        "path": "/tmp/x/sandbox/etc/app.conf",
        "casefile": "/tmp/x/case/pillar/top.sls",
        "_errors": [
            "Specified SLS 'nope' in environment 'base' is not available on the salt master",
            "Rendering SLS 'bad' failed. Please see master log for details.",
            {"kind": "ext_pillar_error", "message": "driver failed"},
            "Specified SLS 'gone' in environment 'base' is not available on the salt master",
            "something else entirely",
        ],
    }})
    assert oracle.normalise("pillar", stdout, "", PAIRS) == {
        "path": "@SANDBOX@/etc/app.conf",
        "casefile": "@CASEDIR@/pillar/top.sls",
        "_errors": ["ext_pillar_error", "missing_sls", "missing_sls", "other", "render_error"],
    }


def test_unwrapped_output_is_accepted_too() -> None:
    assert oracle.normalise("pillar", '{"a": 1}', "", PAIRS) == {"a": 1}
    # "local" alongside other keys is data, not salt-call's wrapper
    assert oracle.normalise("pillar", '{"local": 1, "b": 2}', "", PAIRS) == {"local": 1, "b": 2}


def test_json_after_other_text_on_stdout() -> None:
    stdout = "[WARNING ] something noisy\n{\n  \"local\": {\"a\": 1}\n}\n"
    assert oracle.normalise("pillar", stdout, "", PAIRS) == {"a": 1}


def test_stderr_only_error() -> None:
    stderr = (
        "[ERROR   ] some log line\n"
        "Error running 'state.show_highstate': Pillar failed to render. Additional info follows:\n"
        "\n"
        "- Rendering SLS 'bad' failed. Please see master log for details.\n"
        "- Specified SLS 'nope' in environment 'base' is not available on the salt master\n"
    )
    assert oracle.normalise("highstate", "", stderr, PAIRS) == {
        "__errors__": ["missing_sls", "pillar_failed", "render_error"]}


def test_no_output_at_all_is_a_crash() -> None:
    assert oracle.normalise("lowstate", "", "Traceback (most recent call last):\n  boom", PAIRS) == {
        "__errors__": ["crash"]}


def test_error_list_instead_of_data() -> None:
    stdout = json.dumps({"local": ["Detected conflicting IDs, SLS IDs need to be globally unique.",
                                   "Recursive requisites were found: (x)",
                                   "Recursive requisites were found: (y)"]})
    for check in ("top", "highstate", "lowstate", "apply", "apply_test"):
        assert oracle.normalise(check, stdout, "", PAIRS) == {
            "__errors__": ["conflicting_id", "requisite_cycle"]}
    assert oracle.normalise("pillar", stdout, "", PAIRS) == {
        "__errors__": ["conflicting_id", "requisite_cycle"]}


@pytest.mark.parametrize(("message", "kind"), [
    ("Pillar failed to render with the following messages:", "pillar_failed"),
    ("Detected conflicting IDs, SLS IDs need to be globally unique.", "conflicting_id"),
    ("Recursive requisites were found: (a)", "requisite_cycle"),
    ("Referenced state does not exist for requisite [require: (test: x)] in state [y]", "requisite_not_found"),
    ("The following requisites were not found: ...", "requisite_not_found"),
    ("Specified SLS 'x' in environment 'base' is not available on the salt master", "missing_sls"),
    ("No matching sls found for 'x' in env 'base'", "missing_sls"),
    ("SLS 'x' does not render to a dictionary", "not_a_dict"),
    ("Failed to load ext_pillar cmd_json: ...", "ext_pillar_error"),
    ("Rendering SLS 'x' failed. Please see master log for details.", "render_error"),
    ("Jinja variable 'foo' is undefined", "render_error"),
    ("something unrelated", "other"),
    ({"kind": "access_denied", "message": "refused"}, "access_denied"),
])
def test_error_kind(message: object, kind: str) -> None:
    assert oracle.error_kind(message) == kind


def test_top_keeps_env_and_sls_order() -> None:
    stdout = json.dumps({"local": {"dev": ["b", "a"], "base": ["z", "c"]}})
    assert oracle.normalise("top", stdout, "", PAIRS) == [["dev", ["b", "a"]], ["base", ["z", "c"]]]


def test_highstate_canonical_form() -> None:
    raw = {
        "__extend__": [{"svc": {"__sls__": "b", "__env__": "base",
                                "test": [{"watch": [{"test": "x"}]}, "nop", {"order": 10003}]}}],
        "__exclude__": [{"sls": "c"}],
        "svc": {
            "__sls__": "a", "__env__": "base", "__sls_included_from__": ["top"],
            "test": [{"order": 10001}, {"name": "n"}, "succeed_with_changes", {"comment": "/tmp/x/sandbox/f"}],
            "cmd": ["run", {"order": "last"}, {"cwd": "/"}],
        },
        "early": {"__sls__": "a", "__env__": "base", "test": ["nop", {"order": 1}]},
        "odd": {"__sls__": "a", "__env__": "base", "test": "nop"},
    }
    assert oracle.normalise("highstate", json.dumps({"local": raw}), "", PAIRS) == {
        "__extend__": [{"svc": {"__sls__": "b", "__env__": "base",
                                "test": {"fun": "nop", "args": [["watch", [{"test": "x"}]]]}}}],
        "__exclude__": [{"sls": "c"}],
        "svc": {
            "__sls__": "a", "__env__": "base",
            "test": {"fun": "succeed_with_changes", "args": [["comment", "@SANDBOX@/f"], ["name", "n"]]},
            "cmd": {"fun": "run", "args": [["cwd", "/"], ["order", "last"]]},
        },
        "early": {"__sls__": "a", "__env__": "base", "test": {"fun": "nop", "args": [["order", 1]]}},
        "odd": {"__sls__": "a", "__env__": "base", "test": {"__malformed__": "nop"}},
    }


def test_highstate_argument_order_does_not_matter() -> None:
    one = {"a": {"__sls__": "s", "__env__": "base", "file": ["managed", {"mode": 644}, {"user": "root"}]}}
    two = {"a": {"__sls__": "s", "__env__": "base", "file": [{"user": "root"}, {"mode": 644}, "managed"]}}
    assert oracle.norm_highstate(one) == oracle.norm_highstate(two)
    three = {"a": {"__sls__": "s", "__env__": "base", "file": ["managed", {"mode": 600}, {"user": "root"}]}}
    assert oracle.norm_highstate(one) != oracle.norm_highstate(three)


def test_lowstate_drops_internal_keys_and_collapses_prereq_duplicates() -> None:
    chunk = {"state": "test", "__id__": "t", "name": "t", "fun": "nop", "__sls__": "s", "__env__": "base"}
    raw = [
        {**chunk, "order": 10000, "__prereq__": True},
        {"state": "test", "__id__": "u", "name": "u", "fun": "nop", "__sls__": "s", "__env__": "base",
         "order": 10001, "name_order": 1, "__sls_included_from__": ["x"], "prereq": [{"test": "t"}],
         "__prerequiring__": True},
        {**chunk, "order": 10000, "extra": "last wins"},
    ]
    assert oracle.normalise("lowstate", json.dumps({"local": raw}), "", PAIRS) == [
        {"state": "test", "__id__": "u", "name": "u", "fun": "nop", "__sls__": "s", "__env__": "base",
         "prereq": [{"test": "t"}]},
        {**chunk, "extra": "last wins"},
    ]


def test_apply_keyed_reduction_with_dense_run_num() -> None:
    raw = {
        "file_|-f_|-/tmp/x/sandbox/f_|-managed": {
            "__id__": "f", "__sls__": "s", "name": "/tmp/x/sandbox/f", "result": True, "__run_num__": 0,
            "changes": {"diff": "New file", "mode": "0644"}, "comment": "ignored", "duration": 1.2,
            "start_time": "10:00"},
        "cmd_|-c_|-echo_|-run": {"__id__": "c", "__sls__": "s", "name": "echo", "result": None,
                                 "__run_num__": 4, "changes": {}},
        "test_|-t_|-t_|-nop": {"__id__": "t", "__sls__": "s", "name": "t", "result": False,
                              "__run_num__": 2, "changes": {}, "warnings": ["w"]},
    }
    assert oracle.normalise("apply", json.dumps({"local": raw}), "", PAIRS) == {
        "file_|-f_|-@SANDBOX@/f_|-managed": {"__id__": "f", "__sls__": "s", "name": "@SANDBOX@/f",
                                             "result": True, "__run_num__": 0, "changed": True,
                                             "changes_keys": ["diff", "mode"]},
        "cmd_|-c_|-echo_|-run": {"__id__": "c", "__sls__": "s", "name": "echo", "result": None,
                                 "__run_num__": 2, "changed": False, "changes_keys": []},
        "test_|-t_|-t_|-nop": {"__id__": "t", "__sls__": "s", "name": "t", "result": False,
                              "__run_num__": 1, "changed": False, "changes_keys": []},
    }


# -- materialisation ----------------------------------------------------------------------------

def test_materialise_follows_the_corpus_layout() -> None:
    case = oracle.load_case("031-pillar-ext-file-tree")
    with oracle.materialise(case) as ws:
        tmp = ws.tmp
        assert sorted(os.listdir(tmp)) == ["case", "conf", "run", "sandbox"]
        assert "expected" not in os.listdir(ws.case_dir)
        with open(ws.config_path, encoding="utf-8") as fh:
            written = yaml.safe_load(fh)
        assert written == ws.config
        assert written["pillar_roots"] == {"base": [os.path.join(ws.case_dir, "pillar")]}
        assert written["ext_pillar"][0]["file_tree"]["root_dir"] == os.path.join(ws.case_dir, "tree")
        assert written["grains"]["sandbox"] == ws.sandbox
        assert written["grains"]["os"] == "Debian"
        assert written["file_client"] == "local"
        assert written["cachedir"].startswith(ws.rundir)
        for cur, _dirs, files in os.walk(ws.case_dir):
            assert stat.S_IMODE(os.stat(cur).st_mode) == 0o755
            for name in files:
                assert stat.S_IMODE(os.stat(os.path.join(cur, name)).st_mode) in (0o644, 0o755)
    assert not os.path.exists(tmp)


def test_materialise_substitutes_tokens() -> None:
    case = oracle.load_case("029-pillar-ext-cmd-json")
    with oracle.materialise(case) as ws:
        command = ws.config["ext_pillar"][0]["cmd_json"]
        assert command == f"cat {ws.case_dir}/ext/%s.json"
        assert "@" not in json.dumps(ws.config)


@pytest.mark.parametrize("case", _cases_with("apply_test_fs.json"), ids=lambda c: c.name)
def test_seeded_sandbox_matches_the_dry_run_manifest(case: oracle.Case) -> None:
    """A dry run leaves the seeded sandbox as it was, so its manifest is expected/apply_test_fs.json."""
    with oracle.materialise(case) as ws:
        assert oracle.fs_manifest(ws.sandbox, ws.path_placeholders()) == case.expected("apply_test_fs.json")


def test_fs_manifest(tmp_path) -> None:
    root = tmp_path / "sandbox"
    (root / "d").mkdir(parents=True)
    (root / "d").chmod(0o700)
    (root / "d" / "f.txt").write_text(f"path={root}/d/f.txt\n")
    (root / "d" / "f.txt").chmod(0o600)
    (root / "big.bin").write_bytes(b"\xff\x00" * 10)
    (root / "long.txt").write_text("x" * 401)
    (root / "link").symlink_to(root / "d")
    pairs = [(str(root), "@SANDBOX@")]
    manifest = oracle.fs_manifest(str(root), pairs)
    assert [e["path"] for e in manifest] == ["big.bin", "d", "d/f.txt", "link", "long.txt"]
    by_path = {e["path"]: e for e in manifest}
    assert by_path["d"] == {"path": "d", "type": "dir", "mode": "0700"}
    assert by_path["d/f.txt"]["content"] == "path=@SANDBOX@/d/f.txt\n"
    assert by_path["d/f.txt"]["mode"] == "0600"
    assert by_path["d/f.txt"]["sha256"] == hashlib.sha256(b"path=@SANDBOX@/d/f.txt\n").hexdigest()
    assert by_path["link"] == {"path": "link", "type": "symlink", "target": "@SANDBOX@/d"}
    assert "content" not in by_path["big.bin"] and "content" not in by_path["long.txt"]
    assert by_path["big.bin"]["sha256"] == hashlib.sha256(b"\xff\x00" * 10).hexdigest()


# -- reports ------------------------------------------------------------------------------------

def test_failure_report_names_each_difference() -> None:
    expected = {"a": 1, "b": {"c": [1, 2]}, "gone": True}
    actual = {"a": 2, "b": {"c": [1, 3, 4]}, "new": "x"}
    text = oracle.report("pillar.json", expected, actual)
    assert "a: got 2, expected 1" in text
    assert "b.c: 3 items, expected 2" in text
    assert "b.c[1]: got 3, expected 2" in text
    assert "missing gone" in text
    assert 'unexpected new = "x"' in text
    assert '-  "gone": true' in text and '+  "new": "x"' in text


def test_saltpan_command_line_mirrors_compare_py_templates() -> None:
    case = oracle.load_case("001-pillar-top-glob")
    with oracle.materialise(case) as ws:
        argv = oracle.saltpan_argv("pillar", ws)
        assert argv[1:] == ["-m", "runtime", "compile", "--config", ws.config_path, "--minion", "web01",
                            "--show", "pillar", "--out", "json"]
        assert oracle.saltpan_argv("apply_test", ws)[3:] == [
            "call", "--config", ws.config_path, "--local", "state.apply", "test=True", "--out", "json"]
