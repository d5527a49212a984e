"""`saltpan compile --minion ID --explain KEY`: every contribution with its file:line, in merge order."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from runtime import config as config_mod
from runtime import pipeline
from tests.fleet.fixture import fleet_grains
from tests.fleet.helpers import compile_cli


def explain_json(capsys, root: Path, minion: str, key: str, *extra: str) -> dict:
    code, out, err = compile_cli(capsys, root, "--minion", minion, "--explain", key, "--out", "json", *extra)
    assert code in (0, 1), err
    return json.loads(out)


def places(data: dict) -> list[tuple[str, str, int | None]]:
    return [(c["name"], Path(c["file"]).name if c["file"] else None, c["line"]) for c in data["contributions"]]


def test_a_key_from_one_sls_shows_its_file_line_and_top_file_entry(fleet_repo: Path, capsys) -> None:
    data = explain_json(capsys, fleet_repo, "web-0000", "nginx:port")
    assert data["found"] and data["final"] == 80
    [step] = data["contributions"]
    assert (step["file"], step["line"]) == (str(fleet_repo / "repo/pillar/roles/web.sls"), 5)
    assert step["via"] == [{"by": "top file", "file": str(fleet_repo / "repo/pillar/top.sls"), "line": 4}]
    assert (step["value"], step["value_after"], step["strategy"]) == (80, 80, "smart")


def test_lines_inside_a_jinja_loop_are_template_lines(fleet_repo: Path, capsys) -> None:
    data = explain_json(capsys, fleet_repo, "web-0000", "nginx:vhosts:blog.example.net:root")
    assert places(data) == [("base:roles.web", "web.sls", 10)]
    data = explain_json(capsys, fleet_repo, "web-0000", "nginx:vhosts:shop.example.net")
    assert places(data) == [("base:roles.web", "web.sls", 9)]
    assert data["contributions"][0]["line_kind"] == "source"


def test_include_chain_and_key_nesting(fleet_repo: Path, capsys) -> None:
    pillar = fleet_repo / "repo/pillar"
    data = explain_json(capsys, fleet_repo, "web-0000", "nginx:admin_password", "--unmask")
    [step] = data["contributions"]
    assert (step["name"], step["file"], step["line"]) == ("base:secrets.web", str(pillar / "secrets/web.sls"), 2)
    assert step["nested_under"] == "nginx"
    assert step["via"] == [{"by": "top file", "file": str(pillar / "top.sls"), "line": 4},
                           {"by": "base:roles.web", "file": str(pillar / "roles/web.sls"), "line": 1}]
    assert data["final"] == "web-admin-pass-9876"
    data = explain_json(capsys, fleet_repo, "app-0002", "users:admin:shell")
    [step] = data["contributions"]
    assert (Path(step["file"]).name, step["line"]) == ("users.sls", 4)
    assert [(v["by"], Path(v["file"]).name, v["line"]) for v in step["via"]] == [
        ("top file", "top.sls", 2), ("base:common", "init.sls", 1)]


def test_every_contribution_in_merge_order_with_the_value_after_each(fleet_repo: Path, capsys) -> None:
    data = explain_json(capsys, fleet_repo, "db-0010", "postgres:max_connections")  # db in dc1
    assert places(data) == [("base:roles.db", "db.sls", 3), ("base:special.db_dc1", "db_dc1.sls", 2)]
    assert [(c["value"], c["value_after"]) for c in data["contributions"]] == [(100, 100), (300, 300)]
    assert data["final"] == 300
    code, text, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0010", "--explain", "postgres:max_connections")
    assert code == 0
    assert f"1. sls base:roles.db  {fleet_repo}/repo/pillar/roles/db.sls:3" in text
    assert f"2. sls base:special.db_dc1  {fleet_repo}/repo/pillar/special/db_dc1.sls:2" in text
    assert "merged by smart; postgres:max_connections is now 300" in text
    assert text.rstrip().endswith("final value: 300")


def test_a_parent_key_lists_every_part(fleet_repo: Path, capsys) -> None:
    data = explain_json(capsys, fleet_repo, "web-0003", "nginx", "--unmask")
    assert [(c["name"], c["effect"]) for c in data["contributions"]] == [
        ("base:secrets.web", "adds to it"), ("base:roles.web", "sets")]
    assert data["final"]["port"] == 80 and data["final"]["tls_private_key"] == "web-tls-key-0123456789"


def test_ext_pillar_pillar_opts_and_strategies(tmp_path: Path, capsys) -> None:
    from tests.fleet.fixture import make_repo

    make_repo(tmp_path, {"ext_pillar": [{"cmd_yaml": "echo '{postgres: {max_connections: 500}}'"}],
                         "pillar_opts": True})
    data = explain_json(capsys, tmp_path, "db-0010", "postgres:max_connections")
    assert [(c["source"], c["name"], c["value_after"]) for c in data["contributions"]] == [
        ("sls", "base:roles.db", 100), ("sls", "base:special.db_dc1", 300), ("ext_pillar", "cmd_yaml", 500)]
    assert data["final"] == 500
    data = explain_json(capsys, tmp_path, "db-0010", "master:pillar_opts")
    assert [(c["source"], c["strategy"], c["value"]) for c in data["contributions"]] == [
        ("pillar_opts", "replace", True)]


def test_a_scalar_parent_and_the_aggregate_strategy_replace_the_key(tmp_path: Path, capsys) -> None:
    from tests.fleet.fixture import make_repo

    make_repo(tmp_path, {"pillar_source_merging_strategy": "aggregate"})
    data = explain_json(capsys, tmp_path, "db-0010", "postgres:port")
    # special.db_dc1 has postgres without port: with aggregate it replaces postgres whole
    assert [(c["name"], c["effect"]) for c in data["contributions"]] == [
        ("base:roles.db", "sets"), ("base:special.db_dc1", "replaces the top-level key")]
    assert data["contributions"][-1]["value_after"] is None
    assert data["found"] is False
    (tmp_path / "repo/pillar/special/db_dc1.sls").write_text("postgres: disabled\n")
    make_repo_opts = yaml.safe_load((tmp_path / "saltpan.conf").read_text())
    make_repo_opts["pillar_source_merging_strategy"] = "smart"
    (tmp_path / "saltpan.conf").write_text(yaml.safe_dump(make_repo_opts))
    data = explain_json(capsys, tmp_path, "db-0010", "postgres:port")
    assert [(c["name"], c["effect"], c["at"], c["value"]) for c in data["contributions"]] == [
        ("base:roles.db", "sets", "postgres:port", 5432),
        ("base:special.db_dc1", "sets a parent", "postgres", "disabled")]


def test_an_absent_key_exits_1_with_suggestions(fleet_repo: Path, capsys) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "web-0000", "--explain", "nginx:prot")
    assert code == 1
    assert "nginx:prot is not in the pillar of web-0000." in out
    assert "Did you mean: nginx:port" in out


def test_tracking_does_not_change_the_pillar(fleet_repo: Path) -> None:
    opts = config_mod.load(str(fleet_repo / "saltpan.conf"))
    compiler = pipeline.pillar_compiler(opts)
    for minion_id, grains in list(fleet_grains().items())[:30]:
        grains = {**grains, "id": minion_id}
        plain = compiler.compile(minion_id, grains)
        tracked = compiler.compile(minion_id, grains, track=True)
        assert tracked.pillar == plain.pillar
        assert plain.contributions == [] and tracked.contributions


def test_a_pillar_override_is_the_last_contribution(fleet_repo: Path) -> None:
    from runtime.cli import explain
    from runtime.cli.masking import Masker

    opts = config_mod.load(str(fleet_repo / "saltpan.conf"))
    grains = {**fleet_grains()["db-0010"], "id": "db-0010"}
    result = pipeline.pillar_compiler(opts).compile("db-0010", grains, {"postgres": {"max_connections": 42}},
                                                    track=True)
    expl = explain.explain(result, "db-0010", ("postgres", "max_connections"))
    assert [(s.contribution.source, s.value, s.after) for s in expl.steps] == [
        ("sls", 100, 100), ("sls", 300, 300), ("override", 42, 42)]
    assert expl.final == 42 and expl.consistent
    text = explain.to_text(expl, Masker([]))
    assert "3. pillar override (pillar=... on the command line)" in text
