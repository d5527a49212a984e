"""Config files (runtime/config.py): types, includes, default_include, relative paths, YAML errors."""

from __future__ import annotations

import os

import pytest

from runtime import config
from runtime.config import ConfigError
from tests.unit.helpers import write_tree


def _load(tmp_path, text: str, extra: dict[str, str] | None = None, role: str = "minion") -> dict:
    write_tree(tmp_path, {"minion": text, **(extra or {})})
    return config.load(str(tmp_path / "minion"), role)


@pytest.mark.parametrize(("line", "key", "words"), [
    ("pillar_roots: /srv", "pillar_roots", "must be a mapping of environment to a list of directories"),
    ("pillar_roots: {base: /srv/pillar}", "pillar_roots", "must be a mapping of environment to a list"),
    ("file_roots: [/srv/salt]", "file_roots", "must be a mapping of environment to a list"),
    ("ext_pillar: {}", "ext_pillar", "must be a list"),
    ('pillar_merge_lists: "yes"', "pillar_merge_lists", "must be true or false"),
    ("ext_pillar_first: 1", "ext_pillar_first", "must be true or false"),
    ("nodegroups: [a, b]", "nodegroups", "must be a mapping"),
    ("grains: 5", "grains", "must be a mapping"),
    ("id: [web01]", "id", "must be a string"),
    ("publish_port: '4505'", "publish_port", "must be an integer"),
    ("env_order: base", "env_order", "must be a list"),
])
def test_wrong_types_name_the_key_and_the_file(tmp_path, line: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f"id: web01\n{line}\n")
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'minion'}: option '{key}' ")
    assert words in text


@pytest.mark.parametrize(("line", "words"), [
    ("pillar_source_merging_strategy: deep", "pillar_source_merging_strategy must be one of"),
    ("top_file_merging_strategy: whatever", "top_file_merging_strategy must be merge, same or merge_all"),
])
def test_bad_choices(tmp_path, line: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        _load(tmp_path, f"{line}\n")
    assert str(tmp_path / "minion") in str(info.value)


def test_yaml_syntax_error_names_file_and_line(tmp_path) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, "id: web01\npillar_roots:\n  base: [/srv/pillar\nfile_roots: {}\n")
    assert str(info.value).startswith(f"{tmp_path / 'minion'}:4: config file is not valid YAML/JSON")


def test_a_json_config_is_read_as_json_with_its_errors_named(tmp_path) -> None:
    from runtime.config import read_file

    good = tmp_path / "master.json"
    good.write_text('{"ret_port": 4516, "interface": "127.0.0.2", "auto_accept": true, "x": null}\n')
    assert read_file(str(good)) == {"ret_port": 4516, "interface": "127.0.0.2", "auto_accept": True, "x": None}
    # what json refuses but YAML (Salt's reader for every config file) takes
    for text, data in (("", {}), ("\ufeff{\"ret_port\": 4516}", {"ret_port": 4516}),
                       ("# the master\n{\"ret_port\": 4516}\n", {"ret_port": 4516})):
        good.write_text(text, encoding="utf-8")
        assert read_file(str(good)) == data
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "ret_port": 4516,\n  "interface": "x"\n')
    with pytest.raises(ConfigError) as info:
        read_file(str(bad))
    assert str(info.value).startswith(f"{bad}:4: config file is not valid YAML/JSON")


def test_a_config_file_must_be_a_mapping(tmp_path) -> None:
    with pytest.raises(ConfigError, match="must be a mapping of option: value, got list"):
        _load(tmp_path, "- id\n- web01\n")


def test_missing_config_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file .*nope"):
        config.load(str(tmp_path / "nope"))


def test_empty_config_gives_the_defaults(tmp_path) -> None:
    opts = _load(tmp_path, "")
    assert opts["pillar_roots"] == {"base": ["/srv/pillar"]}
    assert opts["pillar_source_merging_strategy"] == "smart"
    assert opts["renderer"] == "jinja|yaml"
    assert opts["ext_pillar"] == [] and opts["ext_pillar_first"] is False
    assert opts["conf_file"] == str(tmp_path / "minion")


def test_relative_paths_resolve_against_the_config_file(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir("/")
    opts = _load(tmp_path, "pillar_roots: {base: [pillar, ../shared/pillar], dev: [/abs/dev]}\n"
                           "file_roots: {base: [states]}\n"
                           "extension_modules: ext\ncachedir: run/cache\nroot_dir: rootdir\n")
    assert opts["pillar_roots"] == {"base": [str(tmp_path / "pillar"), os.path.normpath(tmp_path / "../shared/pillar")],
                                    "dev": ["/abs/dev"]}
    assert opts["file_roots"] == {"base": [str(tmp_path / "states")]}
    assert opts["extension_modules"] == str(tmp_path / "ext")
    assert opts["cachedir"] == str(tmp_path / "run/cache")
    assert opts["root_dir"] == str(tmp_path / "rootdir")
    # defaults that are relative to root_dir follow it
    assert opts["pki_dir"] == str(tmp_path / "rootdir/etc/saltpan/pki/minion")  # one pki dir per role


def test_default_include_conf_d_files_are_merged(tmp_path) -> None:
    opts = _load(tmp_path, "id: web01\npillar_merge_lists: false\ngrains: {a: 1}\n", {
        "minion.d/10-lists.conf": "pillar_merge_lists: true\n",
        "minion.d/20-roots.conf": "pillar_roots: {base: [mypillar]}\ngrains: {b: 2}\n",
        "minion.d/ignored.txt": "id: not-me\n",
    })
    assert opts["id"] == "web01"
    assert opts["pillar_merge_lists"] is True
    # a relative path resolves against the directory of the file that set it
    assert opts["pillar_roots"] == {"base": [str(tmp_path / "minion.d" / "mypillar")]}
    assert opts["grains"] == {"b": 2}  # later files replace whole top-level keys


def test_default_include_follows_the_role(tmp_path) -> None:
    write_tree(tmp_path, {"master": "id: m\n", "master.d/a.conf": "nodegroups: {web: 'web*'}\n",
                          "minion.d/a.conf": "nodegroups: {db: 'db*'}\n"})
    assert config.load(str(tmp_path / "master"), "master")["nodegroups"] == {"web": "web*"}


def test_custom_default_include(tmp_path) -> None:
    opts = _load(tmp_path, "default_include: conf/*.yaml\n", {"conf/x.yaml": "pillarenv: dev\n",
                                                             "minion.d/y.conf": "pillarenv: prod\n"})
    assert opts["pillarenv"] == "dev"


def test_include_list_and_string(tmp_path) -> None:
    opts = _load(tmp_path, "include:\n  - extra/one.conf\n  - extra/glob*.conf\nid: web01\nenv_order: [base]\n", {
        "extra/one.conf": "pillarenv: one\n",
        "extra/glob1.conf": "env_order: [dev, base]\n",
        "extra/glob2.conf": "saltenv: two\n",
    })
    assert (opts["pillarenv"], opts["env_order"], opts["saltenv"]) == ("one", ["dev", "base"], "two")
    opts = _load(tmp_path, "include: extra/one.conf\n")
    assert opts["pillarenv"] == "one"


def test_wrong_type_in_an_included_file_names_that_file(tmp_path) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, "id: web01\n", {"minion.d/bad.conf": "ext_pillar: {cmd_json: x}\n"})
    assert str(info.value).startswith(f"{tmp_path / 'minion.d' / 'bad.conf'}: option 'ext_pillar'")


def test_include_loop(tmp_path) -> None:
    with pytest.raises(ConfigError, match="config include loop"):
        _load(tmp_path, "include: [a.conf]\n", {"a.conf": "include: [minion]\n"})


def test_unknown_keys_are_kept(tmp_path) -> None:
    assert _load(tmp_path, "my_tool_setting: 3\n")["my_tool_setting"] == 3


def test_overrides(tmp_path) -> None:
    write_tree(tmp_path, {"minion": "pillarenv: a\n"})
    assert config.load(str(tmp_path / "minion"), overrides={"pillarenv": "b"})["pillarenv"] == "b"


def test_every_option_has_a_default_of_its_type() -> None:
    for key, option in config.OPTIONS.items():
        assert config._type_ok(option.kind, option.default), key
        assert option.doc, key


# -- reading options: config.option, the one accessor ------------------------------------------

def test_option_reads_the_value_or_the_tables_default():
    from runtime.config import OPTIONS, option, optional_option

    assert option({"heartbeat_period": 2}, "heartbeat_period", float) == 2.0
    assert option({}, "heartbeat_period", float) == OPTIONS["heartbeat_period"].default
    assert option({"heartbeat_period": None}, "heartbeat_period", float) == OPTIONS["heartbeat_period"].default
    assert option({"file_client": "local"}, "file_client", str) == "local"
    assert option({"master": ["m1", "m2"]}, "master", object) == ["m1", "m2"]
    assert optional_option({}, "master_finger", str) is None
    groups = option({}, "nodegroups", dict)
    groups["x"] = "y"                                   # never the table's own object
    assert OPTIONS["nodegroups"].default == {}


def test_option_refuses_wrong_types_and_unknown_keys():
    from runtime.config import ConfigError, option

    with pytest.raises(ConfigError, match="heartbeat_period"):
        option({"heartbeat_period": "soon"}, "heartbeat_period", float)
    with pytest.raises(ConfigError, match="worker_threads"):
        option({"worker_threads": True}, "worker_threads", int)
    with pytest.raises(KeyError, match="not in runtime.config.OPTIONS"):
        option({}, "no_such_option", int)
    with pytest.raises(ConfigError, match="no default"):
        option({}, "master_finger", str)


def test_runtime_reads_options_through_the_table():
    """No `opts.get("key", default)` restating a default of runtime/config.py's table."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "runtime"
    restated = re.compile(r"""opts\.get\(["'][a-z_]+["'],""")
    found = [f"{path.relative_to(root.parent)}:{number}: {line.strip()}"
             for path in sorted(root.rglob("*.py")) if path.name != "config.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) if restated.search(line)]
    assert not found, "read these through runtime.config.option:\n" + "\n".join(found)
