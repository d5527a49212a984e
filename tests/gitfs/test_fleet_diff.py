"""`saltpan compile --all --diff REV` when the tree is a gitfs remote (and the pillar a git_pillar remote):
the fleet compiled at two refs of the remote, read from the master's clones, lists exactly the minions a
commit changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.gitfs.gitrepos import Worktree, new_repo

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STATES = {"master": {
    "salt/top.sls": ("base:\n  '*':\n    - common\n  'role:web':\n    - match: grain\n    - web\n"
                     "  'role:db':\n    - match: grain\n    - db\n"),
    "salt/common.sls": "motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n",
    "salt/web.sls": "nginx:\n  pkg.installed:\n    - name: nginx\n",
    "salt/db.sls": "postgres:\n  pkg.installed:\n    - name: postgresql-{{ pillar['db']['version'] }}\n",
}, "dev": {
    "salt/top.sls": "dev:\n  'role:web':\n    - match: grain\n    - web\n",
    "salt/web.sls": "nginx:\n  pkg.installed:\n    - name: nginx-dev\n",
}}
PILLAR = {"master": {
    "top.sls": "{{ saltenv }}:\n  '*':\n    - common\n  'role:db':\n    - match: grain\n    - db\n",
    "common.sls": "ntp: pool.ntp.org\n",
    "db.sls": "db:\n  version: 15\n",
}}
FLEET = {"web1": {"role": "web"}, "web2": {"role": "web"}, "db1": {"role": "db"}, "mon1": {"role": "monitor"}}


def compile_(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PROJECT, "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "runtime", "compile", *args], capture_output=True, text=True,
                          timeout=180, env=env, cwd=cwd)


def changed(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return sorted(json.loads(result.stdout)["minions"])


def test_diff_between_two_commits_of_the_gitfs_remote_lists_exactly_the_changed_minions(tmp_path) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    new_repo(str(repos), "states", STATES)
    new_repo(str(repos), "pillar", PILLAR)
    config = tmp_path / "master"
    config.write_text(yaml.safe_dump({
        "root_dir": str(tmp_path / "root"), "fileserver_backend": ["gitfs"], "file_roots": {}, "pillar_roots": {},
        "gitfs_remotes": [{f"file://{repos}/states.git": [{"root": "salt"}]}],
        "ext_pillar": [{"git": [f"__env__ file://{repos}/pillar.git"]}],
    }))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    cwd = str(tmp_path)
    everyone = ["-c", str(config), "--all", "--fleet", str(fleet), "--out", "json"]
    base = [*everyone, "--saltenv", "base"]  # one saltenv per minion, as gitfs users run their fleets

    states = Worktree(str(repos / "states.git"), str(tmp_path / "w-states"))
    first = states.head()
    second = states.commit("master", {"salt/web.sls": "nginx:\n  pkg.installed:\n    - name: nginx-full\n"},
                           "web: nginx-full")
    states.push("master")
    third = states.commit("master", {"salt/common.sls": "motd:\n  file.managed:\n    - name: /etc/motd\n"
                                                        "    - contents: hello again\n"}, "common")
    states.push("master")

    # the master's clones, fetched first; REV against the remote as fetched
    result = compile_(*base, "--fetch", "--diff", first, cwd=cwd)
    assert changed(result) == ["db1", "mon1", "web1", "web2"], result.stderr
    assert f"gitfs remote 'file://{repos}/states.git' at {first} ({first[:10]})" in result.stderr
    result = compile_(*base, "--diff", f"{first}..{second}", cwd=cwd)
    assert changed(result) == ["web1", "web2"], result.stdout + result.stderr
    assert changed(compile_(*base, "--diff", f"{second[:8]}..{third[:8]}", cwd=cwd)) == ["db1", "mon1", "web1",
                                                                                          "web2"]
    same = compile_(*base, "--diff", f"{third}..master", cwd=cwd)
    assert same.returncode == 0 and changed(same) == []
    assert changed(compile_(*base, "--diff", "master~2..master~1", cwd=cwd)) == ["web1", "web2"]

    # the pillar repository is a git remote too: a commit there changes only the minions whose pillar it changes
    pillar = Worktree(str(repos / "pillar.git"), str(tmp_path / "w-pillar"))
    before = pillar.head()
    pillar.commit("master", {"db.sls": "db:\n  version: 16\n"}, "postgres 16")
    pillar.push("master")
    fetched = compile_(*base, "--fetch", "--show", "pillar", cwd=cwd)
    assert fetched.returncode == 0, fetched.stderr
    assert json.loads(fetched.stdout)["db1"]["db"] == {"version": 16}
    result = compile_(*base, "--diff", before, cwd=cwd)
    assert changed(result) == ["db1"], result.stderr
    data = json.loads(result.stdout)["minions"]["db1"]
    assert [c["key"] for c in data["pillar"]] == ["db:version"]
    assert {(s["id"], s["change"]) for s in data["states"]} == {("postgres", "removed"), ("postgres", "added")}

    # --saltenv dev pins the dev saltenv
    states.commit("dev", {"salt/web.sls": "nginx:\n  pkg.installed:\n    - name: nginx-dev2\n"}, "dev")
    states.push("dev")
    assert compile_(*base, "--fetch", "--show", "pillar", cwd=cwd).returncode == 0
    assert changed(compile_(*everyone, "--saltenv", "dev", "--diff", "dev~1", cwd=cwd)) == ["web1", "web2"]

    unknown = compile_(*base, "--diff", "nosuchbranch", cwd=cwd)
    assert unknown.returncode == 2
    assert "'nosuchbranch' is neither a branch, tag or commit of a git remote of the config" in unknown.stderr
