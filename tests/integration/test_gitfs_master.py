"""Issue 19: a real master serving its state tree from git (gitfs) and its pillar from git (git_pillar) to
real minions, with the repositories on this machine: ``states`` behind ``git daemon`` on 127.0.0.1
(``root: salt``, branches master and dev), ``formulas`` and ``pillar`` as bare repositories over
file:// (``mountpoint: formulas``; an ``__env__`` git_pillar remote).

The master fetches at start and on its intervals (GitfsUpdate process), ``saltpan fileserver
update`` / ``saltpan git_pillar update`` fetch now; a remote that fails (unreachable, damaged cache)
keeps serving its last good revision while the others serve as usual, and nothing crashes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitfs.gitrepos import GitDaemon, Link, Worktree, new_repo
from tests.integration.cluster import REPO, Cluster, wait_for

APP_SLS = """\
app_conf:
  file.managed:
    - name: {{ grains['sandbox'] }}/app.conf
    - source: salt://app/files/app.conf
    - template: jinja
    - makedirs: True
"""

STATES = {
    "master": {
        "README.md": "the repository's top: not served (root: salt)\n",
        "secret.txt": "TOPSECRET outside the root\n",
        "salt/top.sls": "base:\n  '*':\n    - app\n  'role:web':\n    - match: grain\n    - formulas.nginx\n",
        "salt/app/init.sls": APP_SLS,
        "salt/app/files/app.conf": "base branch v1, release={{ pillar.get('release', 'none') }}\n",
        "salt/leak.sls": Link("../secret.txt"),
        # the same repository is a git_pillar remote too (root: pillar)
        "pillar/top.sls": "{{ saltenv }}:\n  '*':\n    - site\n",
        "pillar/site.sls": "site: from the states repository, master branch\n",
    },
    "dev": {
        "salt/top.sls": "dev:\n  '*':\n    - app\n",
        "pillar/site.sls": "site: from the states repository, dev branch\n",
        "salt/app/files/app.conf": "dev branch v1, release={{ pillar.get('release', 'none') }}\n",
    },
}

FORMULAS = {"master": {"nginx/init.sls": (
    "nginx_conf:\n  file.managed:\n    - name: {{ grains['sandbox'] }}/nginx.conf\n"
    "    - contents: nginx formula from {{ saltenv }}\n    - makedirs: True\n")}}

PILLAR = {
    "master": {"top.sls": "{{ saltenv }}:\n  '*':\n    - common\n", "common.sls": "release: stable\n"},
    "dev": {"common.sls": "release: testing\n"},
}


class Lab:
    def __init__(self, cluster: Cluster, daemon: GitDaemon, repos: Path, work: Path):
        self.cluster = cluster
        self.daemon = daemon
        self.repos = repos
        self.work = work
        self.states_url = daemon.url("states.git")
        self.worktrees: dict[str, Worktree] = {}

    def worktree(self, name: str) -> Worktree:
        if name not in self.worktrees:
            self.worktrees[name] = Worktree(str(self.repos / f"{name}.git"), str(self.work / name))
        return self.worktrees[name]

    def sandbox(self, minion: str) -> Path:
        return self.cluster.base / f"sandbox-{minion}"

    def saltpan(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return self.cluster.saltpan(args[0], "-c", str(self.cluster.master_conf), *args[1:], timeout=timeout)

    def apply(self, minion: str, *args: str) -> Any:
        data = self.cluster.run_json(minion, "state.apply", *args, "--timeout", "60", timeout=120)
        assert minion in data, data
        return data[minion]

    def master_log(self) -> str:
        return (self.cluster.base / "master.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("gitfs-master")
    repos = base / "repos"
    repos.mkdir()
    new_repo(str(repos), "states", STATES)
    new_repo(str(repos), "formulas", FORMULAS)
    new_repo(str(repos), "pillar", PILLAR)
    (base / "roots").mkdir()
    (base / "roots" / "roots_only.txt").write_text("from file_roots\n")
    (base / "pillar").mkdir()
    daemon = GitDaemon(str(repos))
    daemon.start()
    cluster = Cluster(base, pillar_roots={"base": [str(base / "pillar")]}, file_roots={"base": [str(base / "roots")]},
                      master_opts={
                          "fileserver_backend": ["roots", "gitfs"],
                          "gitfs_remotes": [
                              {daemon.url("states.git"): [{"root": "salt"}]},
                              # fetched by the master every 2 s: the periodic update is seen without a command
                              {f"file://{repos}/formulas.git": [{"mountpoint": "salt://formulas"},
                                                                {"update_interval": 2}]},
                          ],
                          "gitfs_update_interval": 3600,
                          "git_pillar_update_interval": 3600,
                          "ext_pillar": [{"git": [f"__env__ file://{repos}/pillar.git",
                                                  {f"__env__ {daemon.url('states.git')}": [{"root": "pillar"}]}]}],
                          "fileserver_events": True,
                      })
    # one saltenv per minion, as gitfs users set it: without it a highstate runs every branch's top file
    cluster.add_minion("web1", {"role": "web", "os": "Debian"}, saltenv="base")
    cluster.add_minion("dev1", {"role": "web", "os": "Debian"}, saltenv="dev")
    work = base / "work"
    work.mkdir()
    try:
        with cluster.running():
            yield Lab(cluster, daemon, repos, work)
    finally:
        daemon.stop()


def wait_fetched(lab: Lab) -> None:
    """The master fetches every remote at start (its GitfsUpdate process)."""
    def envs() -> list[str]:
        proc = lab.saltpan("fileserver", "envs", "--out", "json")
        return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else []

    wait_for(lambda: {"base", "dev"} <= set(envs()), 30, interval=0.3, what="the master's first fetch")


def state_ok(ret: Any) -> bool:
    """A state run's return in which every state succeeded (a list is Salt's list of compile errors)."""
    return isinstance(ret, dict) and bool(ret) and all(r.get("result") is True for r in ret.values())


def test_state_apply_serves_files_from_the_branch_of_each_saltenv(lab: Lab) -> None:
    wait_fetched(lab)
    assert "GitfsUpdate" in lab.cluster.master_children()
    ret = lab.apply("web1")
    assert state_ok(ret), ret
    assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v1, release=stable\n"
    assert (lab.sandbox("web1") / "nginx.conf").read_text() == "nginx formula from base\n"  # the mountpoint
    # dev1 has saltenv: dev: its states from the dev branch, its __env__ git_pillar from the dev branch too
    ret = lab.apply("dev1")
    assert state_ok(ret), ret
    assert (lab.sandbox("dev1") / "app.conf").read_text() == "dev branch v1, release=testing\n"
    assert not (lab.sandbox("dev1") / "nginx.conf").exists()
    pillars = lab.cluster.run_json("-L", "web1,dev1", "pillar.items")
    assert pillars["web1"]["site"] == "from the states repository, master branch"
    assert pillars["dev1"]["site"] == "from the states repository, dev branch"
    assert (pillars["web1"]["release"], pillars["dev1"]["release"]) == ("stable", "testing")

    listing = lab.cluster.run_json("web1", "cp.list_master")["web1"]
    assert {"app/init.sls", "formulas/nginx/init.sls", "roots_only.txt", "top.sls"} <= set(listing)
    assert not {"leak.sls", "secret.txt", "README.md"} & set(listing)
    assert not any(path.startswith("salt/") for path in listing)
    leaked = lab.cluster.run("web1", "cp.get_file_str", "salt://leak.sls", "--out", "json")
    assert "TOPSECRET" not in leaked.stdout
    proc = lab.saltpan("fileserver", "file_list", "saltenv=dev", "--out", "json")
    assert proc.returncode == 0 and "app/files/app.conf" in json.loads(proc.stdout)


def test_a_pushed_commit_is_served_after_fileserver_update(lab: Lab) -> None:
    wait_fetched(lab)
    commit = lab.worktree("states").commit(
        "master", {"salt/app/files/app.conf": "base branch v2, release={{ pillar.get('release', 'none') }}\n"}, "v2")
    lab.worktree("states").push("master")
    assert state_ok(lab.apply("web1"))
    assert "v1" in (lab.sandbox("web1") / "app.conf").read_text()  # not fetched yet: gitfs_update_interval 3600

    listener = subprocess.Popen(
        [sys.executable, "-m", "runtime", "event", "-c", str(lab.cluster.master_conf), "listen", "--tag",
         "salt/fileserver/gitfs/update", "--timeout", "60", "--out", "json"],
        stdout=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        time.sleep(1.0)  # the listener subscribes
        proc = lab.saltpan("fileserver", "update")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"gitfs remote '{lab.states_url}': updated" in proc.stdout
        assert listener.stdout is not None
        # the periodic fetches of the formulas remote (every 2 s) fire the event too, unchanged
        events = (json.loads(line) for line in listener.stdout)
        event = next(e for e in events if e["data"]["changed"])
    finally:
        listener.kill()
        listener.wait()
    assert event["tag"] == "salt/fileserver/gitfs/update"
    assert {k: v for k, v in event["data"].items() if k != "_stamp"} == {"changed": True, "backend": "gitfs",
                                                                        "errors": []}

    assert state_ok(lab.apply("web1"))
    assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v2, release=stable\n"
    # a commit id is a saltenv too (ref_types: sha), through the master's file server
    got = lab.cluster.run_json("web1", "cp.get_file_str", "salt://app/files/app.conf", f"saltenv={commit}")
    assert got["web1"].startswith("base branch v2")

    again = lab.saltpan("fileserver", "update", "backend=gitfs", "--out", "json")
    assert again.returncode == 0, again.stderr
    reply = json.loads(again.stdout)
    assert reply["changed"] is False and reply["backends"] == ["gitfs"] and len(reply["remotes"]) == 2
    bad = lab.saltpan("fileserver", "update", "backend=hgfs")
    assert bad.returncode == 2 and "backend hgfs is not configured on this master" in bad.stderr


def test_git_pillar_through_the_master_follows_pushes_and_saltenv(lab: Lab) -> None:
    wait_fetched(lab)
    pillar = lab.cluster.run_json("web1", "pillar.items")["web1"]
    assert pillar["release"] == "stable"
    lab.worktree("pillar").commit("master", {"common.sls": "release: stable-2\n"}, "stable-2")
    lab.worktree("pillar").push("master")
    proc = lab.saltpan("git_pillar", "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"git_pillar remote 'file://{lab.repos}/pillar.git': updated" in proc.stdout
    assert state_ok(lab.apply("web1"))  # a state run compiles the pillar afresh
    assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v2, release=stable-2\n"
    assert state_ok(lab.apply("dev1"))
    assert (lab.sandbox("dev1") / "app.conf").read_text() == "dev branch v1, release=testing\n"


def test_the_master_fetches_due_remotes_by_itself(lab: Lab) -> None:
    wait_fetched(lab)
    lab.worktree("formulas").commit("master", {"nginx/extra.sls": "extra:\n  test.nop\n"}, "extra")
    lab.worktree("formulas").push("master")

    def listed() -> bool:
        proc = lab.saltpan("fileserver", "file_list", "--out", "json")
        return proc.returncode == 0 and "formulas/nginx/extra.sls" in json.loads(proc.stdout)

    wait_for(listed, 30, interval=0.5, what="the formulas remote's periodic fetch (update_interval 2)")


def test_force_push_unreachable_remote_and_damaged_cache(lab: Lab) -> None:
    wait_fetched(lab)
    children = lab.cluster.master_children()
    # a force-pushed branch is followed, and the update says so
    lab.worktree("states").rewrite("dev", {
        "salt/top.sls": STATES["dev"]["salt/top.sls"],
        "salt/app/files/app.conf": "dev rewritten, release={{ pillar.get('release', 'none') }}\n"}, "rewrite dev")
    lab.worktree("states").push("dev", force=True)
    proc = lab.saltpan("fileserver", "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "branch 'dev' was force-pushed" in proc.stdout
    assert state_ok(lab.apply("dev1"))
    assert (lab.sandbox("dev1") / "app.conf").read_text() == "dev rewritten, release=testing\n"

    # the git server goes away: the states remote fails, names itself, and keeps its last good revision
    lab.worktree("states").commit("master", {"salt/app/files/app.conf": "base branch v3\n"}, "v3")
    lab.worktree("states").push("master")
    lab.daemon.stop()
    try:
        proc = lab.saltpan("fileserver", "update")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"gitfs remote '{lab.states_url}': fetch failed:" in proc.stdout
        assert "serving the last good revision" in proc.stdout
        assert f"error: gitfs remote '{lab.states_url}': fetch failed" in proc.stderr
        assert f"file://{lab.repos}/formulas.git': " in proc.stdout  # the other remote was fetched
        assert f"gitfs remote '{lab.states_url}': fetch failed" in lab.master_log()
        assert state_ok(lab.apply("web1"))
        assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v2, release=stable-2\n"
        assert (lab.sandbox("web1") / "nginx.conf").exists()
    finally:
        lab.daemon.start()
    proc = lab.saltpan("fileserver", "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert state_ok(lab.apply("web1"))
    assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v3\n"

    # the master's clone of states is damaged: that remote serves nothing (the state run fails with a
    # clear error, nothing crashes), the next update clones it again
    master_cache = Path(lab.cluster.opts()["cachedir"]) / "gitfs"
    clone = next(d for d in master_cache.iterdir()
                 if json.loads((d / "fetched.json").read_text()).get("url") == lab.states_url)
    shutil.rmtree(clone / "repo.git" / "objects")
    (clone / "repo.git" / "objects").mkdir()
    os.utime(clone / "fetched.json")
    assert not state_ok(lab.apply("web1"))  # no top file any more: nothing to apply
    assert any("is damaged" in line and lab.states_url in line for line in lab.master_log().splitlines())
    proc = lab.saltpan("fileserver", "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "damaged" in proc.stdout and "cloned again" in proc.stdout
    assert state_ok(lab.apply("web1"))
    assert (lab.sandbox("web1") / "app.conf").read_text() == "base branch v3\n"

    assert lab.cluster.master.alive()
    assert lab.cluster.master_children() == children, "a master process died and was restarted"
    assert "Traceback" not in lab.master_log()


@pytest.mark.parametrize("bad, message", [
    ({"fileserver_backend": ["gitfs"], "gitfs_remotes": [{"file:///srv/git/x.git": [{"mountpont": "x"}]}]},
     "gitfs_remotes[0] 'file:///srv/git/x.git': invalid parameter 'mountpont'"),
    ({"fileserver_backend": ["roots", "hgfs"]}, "backend 'hgfs' is not supported by saltpan"),
    ({"ext_pillar": [{"git": ["master /srv/git/pillar.git"]}]}, "is not a git URL saltpan can fetch"),
], ids=["gitfs_param", "backend", "git_pillar_url"])
def test_a_bad_git_configuration_keeps_the_master_from_starting(tmp_path: Path, bad: dict, message: str) -> None:
    cluster = Cluster(tmp_path, master_opts=bad)
    try:
        cluster.write_master_conf()
        proc = cluster.saltpan("master", "-c", str(cluster.master_conf), timeout=60)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.startswith("saltpan master: ") and message in proc.stderr
    finally:
        cluster.stop()
