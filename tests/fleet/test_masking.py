"""pillar_mask_patterns: secrets masked in human output as Salt 3008's pillar.items masks them; --unmask shows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from runtime.cli.masking import PLACEHOLDER, Masker, mask_strings, redact
from tests.fleet.fixture import make_repo
from tests.fleet.helpers import compile_cli, read_dir

SALT_PYTHON = "/opt/saltvenv/bin/python"
SAMPLE = {"password": "hunter2", "port": 5432, "enabled": True, "off": False, "zero": 0, "empty": "",
          "none": None, "users": ["a", "b", ""], "nested": {"api_token": "xyz", "ratio": 0.5}}


def test_redact_has_salts_look() -> None:
    assert redact(SAMPLE) == {"password": PLACEHOLDER, "port": PLACEHOLDER, "enabled": PLACEHOLDER, "off": False,
                              "zero": 0, "empty": "", "none": None, "users": [PLACEHOLDER, PLACEHOLDER, ""],
                              "nested": {"api_token": PLACEHOLDER, "ratio": PLACEHOLDER}}


@pytest.mark.skipif(not os.path.exists(SALT_PYTHON), reason="optional: real Salt is not installed in /opt/saltvenv")
def test_redact_equals_salts_own_masking() -> None:
    code = ("import json, sys, salt.utils.secret as s; "
            "print(json.dumps(s.serial(json.loads(sys.stdin.read()))))")
    proc = subprocess.run([SALT_PYTHON, "-c", code], input=json.dumps(SAMPLE), capture_output=True, text=True,
                          timeout=60, check=True)
    assert redact(SAMPLE) == json.loads(proc.stdout)


def test_masker_matches_key_globs_at_any_depth() -> None:
    masker = Masker(["*password*", "*TOKEN*"])
    data = {"db": {"Admin_Password": "x1", "port": 1}, "api_token": {"k": "v"}, "list": [{"password": "p"}]}
    assert masker.mask(data) == {"db": {"Admin_Password": PLACEHOLDER, "port": 1}, "api_token": {"k": PLACEHOLDER},
                                 "list": [{"password": PLACEHOLDER}]}
    assert data["db"]["Admin_Password"] == "x1"  # the input is untouched
    assert masker.secret_path(("db", "admin_password")) and not masker.secret_path(("db", "port"))
    assert Masker([]).mask(data) is data
    secrets = Masker(["*password*"]).secrets({"a": {"password": "longsecret"}, "b": "longsecret-not", "c": "x"})
    assert secrets == ["longsecret"]
    assert mask_strings({"cmd": "echo longsecret"}, secrets) == {"cmd": f"echo {PLACEHOLDER}"}


def test_nested_output_masks_and_unmask_shows(fleet_repo: Path, capsys) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001")
    assert code == 0
    assert "password:\n        **********" in out and "db-secret-pw-4242" not in out
    assert "max_connections:\n        300" in out  # other values as they are (db in dc1)
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001", "--unmask")
    assert "db-secret-pw-4242" in out
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001", "--out", "txt")
    assert "db-secret-pw-4242" not in out and PLACEHOLDER in out


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_machine_formats_keep_real_values(fleet_repo: Path, capsys, fmt: str) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001", "--out", fmt)
    assert code == 0
    assert yaml.safe_load(out)["postgres"]["password"] == "db-secret-pw-4242"


def test_states_that_carry_a_secret_are_masked_too(fleet_repo: Path, capsys) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001", "--show", "lowstate")
    assert code == 0
    assert "*:*:*:postgres:**********" in out and "db-secret-pw-4242" not in out
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "db-0001", "--show", "lowstate", "--unmask")
    assert "*:*:*:postgres:db-secret-pw-4242" in out


def test_fleet_output_and_out_dir(fleet_repo: Path, capsys) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--all")
    assert code == 0
    assert "db-0001:\n    ----------" in out and "web-admin-pass-9876" not in out and "db-secret-pw" not in out
    code, _, _ = compile_cli(capsys, fleet_repo, "--all", "--out", "nested", "--out-dir", str(fleet_repo / "n"))
    nested = read_dir(fleet_repo / "n")
    assert PLACEHOLDER in nested["db-0001.txt"] and "db-secret-pw" not in nested["db-0001.txt"]
    code, _, _ = compile_cli(capsys, fleet_repo, "--all", "--out-dir", str(fleet_repo / "j"))
    assert json.loads(read_dir(fleet_repo / "j")["db-0001.json"])["postgres"]["password"] == "db-secret-pw-4242"


def test_explain_masks_secrets(fleet_repo: Path, capsys) -> None:
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "web-0000", "--explain", "nginx")
    assert code == 0
    assert "web-admin-pass-9876" not in out and "web-tls-key" not in out and PLACEHOLDER in out
    code, out, _ = compile_cli(capsys, fleet_repo, "--minion", "web-0000", "--explain", "nginx", "--unmask")
    assert "web-admin-pass-9876" in out


def test_patterns_are_configurable(tmp_path: Path, capsys) -> None:
    make_repo(tmp_path, {"pillar_mask_patterns": ["*port*"]})
    code, out, _ = compile_cli(capsys, tmp_path, "--minion", "db-0001")
    assert "db-secret-pw-4242" in out and "port:\n        **********" in out
    make_repo_conf = yaml.safe_load((tmp_path / "saltpan.conf").read_text())
    make_repo_conf["pillar_mask_patterns"] = "*port*"
    (tmp_path / "saltpan.conf").write_text(yaml.safe_dump(make_repo_conf))
    code, _, err = compile_cli(capsys, tmp_path, "--minion", "db-0001")
    assert code == 2 and "pillar_mask_patterns" in err
