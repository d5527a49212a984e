"""Masterless `saltpan call --local` with gitfs and git_pillar: every call fetches first (as Salt's masterless
minion does), and a remote that cannot be fetched is a warning naming it while its last good revision serves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from tests.gitfs.gitrepos import GitDaemon, Worktree, new_repo

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STATES = {"master": {
    "salt/top.sls": "base:\n  '*':\n    - app\n",
    "salt/app.sls": ("app_conf:\n  file.managed:\n    - name: {{ grains['sandbox'] }}/app.conf\n"
                     "    - source: salt://files/app.conf\n    - template: jinja\n    - makedirs: True\n"),
    "salt/files/app.conf": "v1 release={{ pillar['release'] }}\n",
}}
PILLAR = {"master": {"top.sls": "{{ saltenv }}:\n  '*':\n    - common\n", "common.sls": "release: one\n"}}


def call(config: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PROJECT, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "runtime", "call", "--local", "-c", config, *args, "--out", "json"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=PROJECT)


def test_every_masterless_call_fetches_and_a_failed_fetch_serves_the_last_good_revision(tmp_path) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    new_repo(str(repos), "states", STATES)
    new_repo(str(repos), "pillar", PILLAR)
    sandbox = tmp_path / "sandbox"
    daemon = GitDaemon(str(repos))
    daemon.start()
    try:
        config = tmp_path / "minion"
        config.write_text(yaml.safe_dump({
            "id": "solo1", "file_client": "local", "root_dir": str(tmp_path / "root"),
            "grains": {"sandbox": str(sandbox)},
            "fileserver_backend": ["gitfs"], "file_roots": {},
            "gitfs_remotes": [{daemon.url("states.git"): [{"root": "salt"}]}],
            "pillar_roots": {}, "ext_pillar": [{"git": [f"__env__ file://{repos}/pillar.git"]}],
        }))
        first = call(str(config), "state.apply")
        assert first.returncode == 0, first.stdout + first.stderr
        assert (sandbox / "app.conf").read_text() == "v1 release=one\n"
        cache = tmp_path / "root" / "var" / "cache" / "saltpan" / "minion"
        assert len(os.listdir(cache / "gitfs")) == 1 and len(os.listdir(cache / "git_pillar")) == 1

        states = Worktree(str(repos / "states.git"), str(tmp_path / "w-states"))
        states.commit("master", {"salt/files/app.conf": "v2 release={{ pillar['release'] }}\n"}, "v2")
        states.push("master")
        pillar = Worktree(str(repos / "pillar.git"), str(tmp_path / "w-pillar"))
        pillar.commit("master", {"common.sls": "release: two\n"}, "two")
        pillar.push("master")
        second = call(str(config), "state.apply")  # no update command: the call fetched both
        assert second.returncode == 0, second.stdout + second.stderr
        assert (sandbox / "app.conf").read_text() == "v2 release=two\n"
        assert json.loads(call(str(config), "pillar.items").stdout)["local"]["release"] == "two"

        states.commit("master", {"salt/files/app.conf": "v3\n"}, "v3")
        states.push("master")
        daemon.stop()
        offline = call(str(config), "state.apply")
        assert offline.returncode == 0, offline.stdout + offline.stderr
        assert f"warning: gitfs remote '{daemon.url('states.git')}': fetch failed:" in offline.stderr
        assert "serving the last good revision" in offline.stderr
        assert (sandbox / "app.conf").read_text() == "v2 release=two\n"
    finally:
        daemon.stop()


def test_a_remote_never_fetched_is_named_and_a_bad_config_is_a_usage_error(tmp_path) -> None:
    config = tmp_path / "minion"
    config.write_text(yaml.safe_dump({
        "id": "solo1", "file_client": "local", "root_dir": str(tmp_path / "root"),
        "fileserver_backend": ["gitfs"], "file_roots": {},
        "gitfs_remotes": [f"file://{tmp_path}/nowhere.git"],
    }))
    result = call(str(config), "state.show_top")
    assert f"warning: gitfs remote 'file://{tmp_path}/nowhere.git': fetch failed:" in result.stderr
    assert "it was never fetched, so its files are missing" in result.stderr
    config.write_text(yaml.safe_dump({
        "id": "solo1", "file_client": "local", "root_dir": str(tmp_path / "root"),
        "fileserver_backend": ["gitfs"], "gitfs_remotes": [{f"file://{tmp_path}/x.git": [{"mountpont": "x"}]}],
    }))
    bad = call(str(config), "test.ping")
    assert bad.returncode == 2 and "invalid parameter 'mountpont'" in bad.stderr
