"""pillar_schema and `compile --all --validate`: violations per minion with the key path and the file:line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.fleet.fixture import fleet_grains, make_repo
from tests.fleet.helpers import compile_cli

NGINX_SCHEMA = """
type: object
required: [port, workers]
properties:
  port: {type: integer, minimum: 1, maximum: 65535}
  workers: {type: integer, maximum: 6}
"""

POSTGRES_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "max_connections": {"type": "integer", "maximum": 250},
        "password": {"type": "string", "minLength": 20},
    },
}

WHOLE_SCHEMA = {"type": "object", "required": ["datacenter", "ntp"],
                "properties": {"datacenter": {"enum": ["dc1", "dc2", "dc3"]}}}


def with_schemas(root: Path, spec) -> None:
    schemas = root / "schemas"
    schemas.mkdir()
    (schemas / "nginx.yaml").write_text(NGINX_SCHEMA)
    (schemas / "postgres.json").write_text(json.dumps(POSTGRES_SCHEMA))
    (schemas / "pillar.json").write_text(json.dumps(WHOLE_SCHEMA))
    make_repo(root, {"pillar_schema": spec})


def test_violations_name_the_minion_key_and_file_line(tmp_path: Path, capsys) -> None:
    with_schemas(tmp_path, {"nginx": "schemas/nginx.yaml", "postgres": "schemas/postgres.json"})
    code, out, err = compile_cli(capsys, tmp_path, "--all", "--validate", "--out", "json")
    assert code == 1, err
    report = json.loads(out)
    fleet = fleet_grains()
    web_4cpu = {m for m, g in fleet.items() if g["role"] == "web" and g["cpus"] == 4}
    dbs = {m for m, g in fleet.items() if g["role"] == "db"}
    db_dc1 = {m for m in dbs if fleet[m]["dc"] == "dc1"}
    assert set(report["violations"]) == web_4cpu | dbs
    assert report["checked"] == 240
    pillar = tmp_path / "repo/pillar"
    web = report["violations"][sorted(web_4cpu)[0]]
    assert [(v["key"], v["file"], v["line"], v["source"]) for v in web] == [
        ("nginx:workers", str(pillar / "roles/web.sls"), 6, "sls base:roles.web")]
    assert web[0]["message"] == "8 is greater than the maximum of 6"
    assert web[0]["schema"] == str(tmp_path / "schemas/nginx.yaml")
    db = report["violations"][sorted(db_dc1)[0]]
    assert [(v["key"], Path(v["file"]).name, v["line"]) for v in db] == [
        ("postgres:max_connections", "db_dc1.sls", 2), ("postgres:password", "db.sls", 4)]
    # a secret value never appears in a violation message
    assert db[1]["message"].startswith("********** fails the schema's 'minLength' rule")
    assert "db-secret-pw-4242" not in out


def test_human_report_and_summary(tmp_path: Path, capsys) -> None:
    with_schemas(tmp_path, {"postgres": "schemas/postgres.json"})
    code, out, err = compile_cli(capsys, tmp_path, "--all", "--validate")
    assert code == 1
    pillar = tmp_path / "repo/pillar"
    assert (f"db-0010: postgres:max_connections: 300 is greater than the maximum of 250 "
            f"(from {pillar}/special/db_dc1.sls:2) [schema {tmp_path}/schemas/postgres.json]") in out
    dbs = sum(1 for g in fleet_grains().values() if g["role"] == "db")
    db_dc1 = sum(1 for g in fleet_grains().values() if (g["role"], g["dc"]) == ("db", "dc1"))
    assert out.rstrip().endswith(f"{dbs + db_dc1} schema violations on {dbs} of 240 minions checked.")
    assert "240 ok, 0 failed" in err


def test_a_valid_fleet_passes_the_gate(tmp_path: Path, capsys) -> None:
    with_schemas(tmp_path, str(Path("schemas/pillar.json")))
    code, out, _ = compile_cli(capsys, tmp_path, "--all", "--validate")
    assert code == 0
    assert "pillar_schema: all 240 minions checked are valid." in out


def test_whole_pillar_schema_missing_key(tmp_path: Path, capsys) -> None:
    with_schemas(tmp_path, "schemas/pillar.json")
    (tmp_path / "repo/pillar/common/init.sls").write_text(
        "include:\n  - common.users\n{% if grains['dc'] != 'dc2' %}\ndatacenter: {{ grains['dc'] }}\n{% endif %}\n"
        "ntp: {}\n")
    code, out, _ = compile_cli(capsys, tmp_path, "--all", "--validate", "--out", "json")
    assert code == 1
    report = json.loads(out)["violations"]
    assert set(report) == {m for m, g in fleet_grains().items() if g["dc"] == "dc2"}
    assert report["app-0005"] == [{"key": "(the whole pillar)", "message": "'datacenter' is a required property",
                                   "schema": str(tmp_path / "schemas/pillar.json"), "file": None, "line": None,
                                   "source": None, "line_kind": "source"}]


def test_one_minion_and_bad_schemas(tmp_path: Path, capsys) -> None:
    with_schemas(tmp_path, {"nginx": "schemas/nginx.yaml"})
    code, out, _ = compile_cli(capsys, tmp_path, "--minion", "web-0003", "--validate")  # 4 cpus
    assert code == 1 and "web-0003: nginx:workers: 8 is greater than the maximum of 6" in out
    (tmp_path / "schemas/nginx.yaml").write_text("type: [object\n")
    code, _, err = compile_cli(capsys, tmp_path, "--all", "--validate")
    assert code == 2 and f"{tmp_path}/schemas/nginx.yaml:" in err and "not valid JSON/YAML" in err
    (tmp_path / "schemas/nginx.yaml").write_text("type: objectish\n")
    code, _, err = compile_cli(capsys, tmp_path, "--all", "--validate")
    assert code == 2 and "not a valid JSON Schema" in err
    conf = yaml.safe_load((tmp_path / "saltpan.conf").read_text())
    del conf["pillar_schema"]
    (tmp_path / "saltpan.conf").write_text(yaml.safe_dump(conf))
    code, _, err = compile_cli(capsys, tmp_path, "--all", "--validate")
    assert code == 2 and "--validate needs pillar_schema" in err
