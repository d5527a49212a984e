"""`saltpan compile`: exit status, stderr, --out, --grains, --pillarenv, unknown minions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from runtime.cli.main import main
from tests.unit.helpers import write_tree

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def tree(tmp_path):
    write_tree(tmp_path, {
        "pillar/top.sls": """
            base:
              '*':
                - common
              'G@role:web':
                - web
        """,
        "pillar/common.sls": "common:\n  id: {{ grains['id'] }}\n  grains: {{ grains | json }}\n",
        "pillar/web.sls": "web: true\nlist: [a, b]\n",
        "pillar/dev/top.sls": "dev:\n  '*':\n    - devdata\n",
        "pillar/dev/devdata.sls": "devdata: 1\n",
        "minion": "pillar_roots:\n  base: [pillar]\n  dev: [pillar/dev]\n",
        "grains.yaml": "role: web\nos: Debian\n",
    })
    return tmp_path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["compile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_and_exit_status_zero(tree, capsys) -> None:
    code, out, err = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                          "--grains", str(tree / "grains.yaml"), "--out", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "common": {"id": "web01", "grains": {"id": "web01", "os": "Debian", "role": "web"}},
        "web": True, "list": ["a", "b"], "devdata": 1,
    }


def test_an_unknown_minion_without_grains_still_compiles(tree, capsys) -> None:
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "nobody", "--out", "json")
    assert code == 0
    assert json.loads(out) == {"common": {"id": "nobody", "grains": {"id": "nobody"}}, "devdata": 1}


def test_grains_file_cannot_change_the_id(tree, capsys) -> None:
    (tree / "grains.yaml").write_text("id: someone-else\nrole: web\n")
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"), "--out", "json")
    assert code == 0
    assert json.loads(out)["common"]["id"] == "web01"


def test_config_grains_and_grains_file_merge(tree, capsys) -> None:
    (tree / "minion").write_text("pillar_roots: {base: [pillar]}\ngrains: {os: Ubuntu, dc: x}\n")
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"), "--out", "json")
    assert code == 0
    assert json.loads(out)["common"]["grains"] == {"id": "web01", "os": "Debian", "dc": "x", "role": "web"}


def test_pillarenv(tree, capsys) -> None:
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"), "--pillarenv", "dev", "--out", "json")
    assert code == 0
    assert json.loads(out) == {"devdata": 1}


def test_yaml_output(tree, capsys) -> None:
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"), "--out", "yaml")
    assert code == 0
    assert yaml.safe_load(out) == {
        "common": {"id": "web01", "grains": {"id": "web01", "os": "Debian", "role": "web"}},
        "web": True, "list": ["a", "b"], "devdata": 1,
    }


def test_nested_output(tree, capsys) -> None:
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"), "--pillarenv", "dev", "--out", "nested")
    assert code == 0
    assert out.splitlines() == ["----------", "devdata:", "    1"]
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                        "--grains", str(tree / "grains.yaml"))
    lines = out.splitlines()
    assert "web:" in lines and "    True" in lines and "list:" in lines and "    - a" in lines


def test_render_errors_exit_non_zero_and_name_file_and_line(tree, capsys) -> None:
    (tree / "pillar/web.sls").write_text("web: true\nbad: {{ nope }}\n")
    code, out, err = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01",
                          "--grains", str(tree / "grains.yaml"), "--out", "json")
    assert code == 1
    pillar = json.loads(out)
    assert pillar["_errors"] == ["Rendering SLS 'web' failed. Please see master log for details."]
    assert "web" not in pillar and pillar["devdata"] == 1
    (line,) = err.splitlines()
    assert line.startswith(f"error: {tree / 'pillar/web.sls'}:2: ")
    assert "'nope' is undefined" in line


def test_missing_sls_exits_non_zero(tree, capsys) -> None:
    (tree / "pillar/top.sls").write_text("base:\n  '*':\n    - common\n    - gone\n")
    code, _, err = _run(capsys, "--config", str(tree / "minion"), "--minion", "web01", "--out", "json")
    assert code == 1
    assert f"{tree / 'pillar/top.sls'}:2: Specified SLS 'gone'" in err


@pytest.mark.parametrize(("setup", "argv", "words"), [
    (None, ["--config", "{tmp}/nope", "--minion", "x"], "cannot read config file {tmp}/nope"),
    ({"minion": "pillar_roots: /srv\n"}, ["--config", "{tmp}/minion", "--minion", "x"],
     "{tmp}/minion: option 'pillar_roots' must be"),
    ({"minion": "a: [\n"}, ["--config", "{tmp}/minion", "--minion", "x"], "{tmp}/minion:2: config file is not valid"),
    ({"minion": "{}\n", "g.yaml": "a: [\n"}, ["--config", "{tmp}/minion", "--minion", "x", "--grains", "{tmp}/g.yaml"],
     "{tmp}/g.yaml:2: grains file is not valid YAML/JSON"),
    ({"minion": "{}\n", "g.yaml": "[1]\n"}, ["--config", "{tmp}/minion", "--minion", "x", "--grains", "{tmp}/g.yaml"],
     "{tmp}/g.yaml: a grains file must be a mapping"),
    ({"minion": "{}\n"}, ["--config", "{tmp}/minion", "--minion", "x", "--grains", "{tmp}/none.yaml"],
     "cannot read grains file {tmp}/none.yaml"),
    ({"minion": "{}\n"}, ["--config", "{tmp}/minion"], "compile needs --minion ID"),
])
def test_usage_errors_exit_2_without_a_traceback(tmp_path, capsys, setup, argv, words) -> None:
    write_tree(tmp_path, setup or {})
    code, out, err = _run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2
    assert out == ""
    assert err.startswith("saltpan compile: ")
    assert words.replace("{tmp}", str(tmp_path)) in err
    assert "Traceback" not in err


def test_the_id_in_the_config_file_is_the_default_minion(tree, capsys) -> None:
    (tree / "minion").write_text("id: cfg01\npillar_roots: {base: [pillar]}\n")
    code, out, _ = _run(capsys, "--config", str(tree / "minion"), "--out", "json")
    assert code == 0
    assert json.loads(out)["common"]["id"] == "cfg01"


def test_python_dash_m_runtime_entry_point(tree) -> None:
    (tree / "pillar/web.sls").write_text("web: true\n\nbad: {{ nope }}\n")
    env = dict(os.environ, PYTHONPATH=PROJECT)
    proc = subprocess.run([sys.executable, "-m", "runtime", "compile", "--config", str(tree / "minion"),
                           "--minion", "web01", "--grains", str(tree / "grains.yaml"), "--out", "json"],
                          capture_output=True, text=True, env=env, cwd=str(tree), timeout=60, check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["devdata"] == 1
    assert f"{tree / 'pillar/web.sls'}:3:" in proc.stderr
    ok = subprocess.run([sys.executable, "-m", "runtime", "compile", "--config", str(tree / "minion"),
                         "--minion", "db01", "--out", "json"],
                        capture_output=True, text=True, env=env, cwd=str(tree), timeout=60, check=False)
    assert ok.returncode == 0
    assert ok.stderr.startswith("warning: minion 'db01' has no grains here")
    assert json.loads(ok.stdout)["common"]["id"] == "db01"
