"""`saltpan compile` with a master config that uses gitfs and git_pillar: the master's cached clones, --fetch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from tests.netutil import free_port

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def saltpan(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PROJECT, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "runtime", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def write_config(tmp_path, repos: dict, **extra) -> str:
    config = {
        "root_dir": str(tmp_path / "root"),  # no cachedir: the master's default under root_dir
        "fileserver_backend": ["gitfs"],
        "gitfs_remotes": [{repos["states"]: [{"root": "salt"}]}, {repos["formulas"]: [{"mountpoint": "formulas"}]}],
        "ext_pillar": [{"git": [f"__env__ {repos['pillar']}"]}],
    }
    config.update(extra)
    path = tmp_path / "master"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_compile_reads_the_masters_clones_and_fetch_updates_them(tmp_path, repos) -> None:
    config = write_config(tmp_path, repos)
    grains = tmp_path / "grains.json"
    grains.write_text(json.dumps({"role": "web", "os_family": "Debian"}))
    cold = saltpan("compile", "-c", config, "-m", "web1", "--grains", str(grains), "--out", "json", cwd=str(tmp_path))
    assert cold.returncode == 1
    assert "error: gitfs remote 'file://" in cold.stderr and "has not been fetched yet" in cold.stderr
    assert "git_pillar remote '__env__ file://" in cold.stderr

    fetched = saltpan("compile", "-c", config, "-m", "web1", "--grains", str(grains), "--fetch", "--show",
                      "lowstate", "--out", "json", cwd=str(tmp_path))
    assert fetched.returncode == 0, fetched.stderr
    assert any(c["__id__"] == "web_site_dev" for c in json.loads(fetched.stdout))
    master_cache = tmp_path / "root" / "var" / "cache" / "saltpan" / "master"
    assert len(os.listdir(master_cache / "gitfs")) == 2 and len(os.listdir(master_cache / "git_pillar")) == 1

    offline = saltpan("compile", "-c", config, "-m", "web1", "--grains", str(grains), "--pillarenv", "dev",
                      "--out", "json", cwd=str(tmp_path))
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout) == {"who": "dev-branch", "release": "testing"}


def test_a_failed_fetch_still_compiles_from_the_last_good_revision(tmp_path, repos) -> None:
    config = write_config(tmp_path, repos)
    assert saltpan("compile", "-c", config, "-m", "web1", "--fetch", cwd=str(tmp_path)).returncode == 0
    unreachable = f"git://127.0.0.1:{free_port()}/states.git"
    broken = write_config(tmp_path, repos, gitfs_remotes=[{repos["states"]: [{"root": "salt"}]},
                                                          {repos["formulas"]: [{"mountpoint": "formulas"}]},
                                                          {unreachable: [{"mountpoint": "gone"}]}])
    result = saltpan("compile", "-c", broken, "-m", "web1", "--fetch", "--show", "top", "--out", "json",
                     cwd=str(tmp_path))
    assert result.returncode == 1
    assert f"error: gitfs remote '{unreachable}': fetch failed:" in result.stderr
    assert json.loads(result.stdout)["base"] == ["common"]  # the other remote still serves


def test_bad_git_config_is_a_usage_error(tmp_path, repos) -> None:
    config = write_config(tmp_path, repos, gitfs_remotes=[{repos["states"]: [{"roots": "salt"}]}])
    result = saltpan("compile", "-c", config, "-m", "web1", "--show", "top", cwd=str(tmp_path))
    assert result.returncode == 2
    assert "gitfs_remotes[0] 'file://" in result.stderr and "invalid parameter 'roots'" in result.stderr


def test_compile_all_serves_gitfs(tmp_path, repos) -> None:
    config = write_config(tmp_path, repos)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({"web1": {"role": "web"}, "db1": {"role": "db"}}))
    result = saltpan("compile", "-c", config, "--all", "--fleet", str(fleet), "--fetch", "--show", "lowstate",
                     "--out", "json", "-j", "1", cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert any(c["__id__"] == "db_service" for c in data["db1"])
    assert any(c["__id__"] == "web_site_base" for c in data["web1"])


def test_without_git_remotes_pygit2_is_never_imported(tmp_path) -> None:
    code = ("import sys; from runtime.cli.main import main; rc = main(['compile', '--show', 'lowstate', '-m', 'web01']); "
            "sys.exit(3 if 'pygit2' in sys.modules else rc)")
    env = {**os.environ, "PYTHONPATH": PROJECT}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
