"""git_pillar (ext_pillar git) over real repositories, through the pillar compiler and the driver loader."""

from __future__ import annotations

from runtime import pipeline
from runtime.gitfs.update import update
from tests.gitfs.gitrepos import Worktree

WEB = {"id": "web1", "role": "web"}


def pillar_opts(tmp_path, repos_list: list, **extra) -> dict:
    opts = {"cachedir": str(tmp_path / "cache"), "pillar_roots": {}, "ext_pillar": [{"git": repos_list}],
            "ext_pillar_timeout": 30}
    opts.update(extra)
    return opts


def compiled(opts: dict, fetch: bool = True, **kwargs) -> dict:
    if fetch:
        assert all(r.ok for r in update(opts))
    return pipeline.pillar_compiler(opts).compile("web1", WEB, **kwargs).pillar


def test_env_branch_follows_pillarenv_then_saltenv(tmp_path, repos) -> None:
    opts = pillar_opts(tmp_path, [f"__env__ {repos['pillar']}"])
    base = compiled(opts)
    assert base == {"who": "master-branch", "release": "stable", "users": ["alice"],
                    "site": {"name": "web1.example.com", "branch": "master"}}
    assert compiled(opts, fetch=False, saltenv="dev") == {"who": "dev-branch", "release": "testing"}
    assert compiled(opts, fetch=False, pillarenv="dev", saltenv="base")["who"] == "dev-branch"
    assert compiled({**opts, "pillarenv": "dev"}, fetch=False)["who"] == "dev-branch"
    assert compiled({**opts, "saltenv": "dev", "pillarenv_from_saltenv": True}, fetch=False)["who"] == "dev-branch"


def test_root_env_and_pillarenv_filter(tmp_path, repos) -> None:
    opts = pillar_opts(tmp_path, [f"__env__ {repos['pillar']}", {f"master {repos['extpillar']}": [{"root": "pillar"}]},
                                  {f"master {repos['formulas']}": [{"env": "nowhere"}, {"name": "formulas-pillar"}]}])
    data = compiled(opts)
    assert data["shared"] == {"from": "extpillar repo (root pillar)"} and data["who"] == "master-branch"
    # pillarenv dev: only remotes of env dev count (the __env__ one); the root-pillar remote is base
    dev = compiled(opts, fetch=False, pillarenv="dev")
    assert dev == {"who": "dev-branch", "release": "testing"}


def test_mountpoint_remote_is_read_through_the_others_roots(tmp_path, repos) -> None:
    work = Worktree(repos["pillar"][len("file://"):], str(tmp_path / "work"))
    work.commit("master", {"top.sls": "base:\n  '*':\n    - common\n    - ext.shared\n"}, "include mounted")
    work.push("master")
    remotes = [f"master {repos['pillar']}",
               {f"master {repos['extpillar']}": [{"root": "pillar"}, {"mountpoint": "salt://ext"}]}]
    data = compiled(pillar_opts(tmp_path, remotes))
    assert data == {"who": "master-branch", "release": "stable", "users": ["alice"],
                    "shared": {"from": "extpillar repo (root pillar)"}}
    without = compiled(pillar_opts(tmp_path, remotes, git_pillar_includes=False), fetch=False)
    assert "shared" not in without
    assert any("Specified SLS 'ext.shared' in environment 'base' is not available" in e
               for e in without["_errors"])


def test_missing_branches(tmp_path, repos) -> None:
    fixed = pillar_opts(tmp_path, [f"release {repos['pillar']}"])
    data = compiled(fixed)
    (error,) = data["_errors"]
    assert "git_pillar remote 'release file://" in error and "no branch or tag 'release'" in error
    assert "(branches: dev, master)" in error
    env_only = pillar_opts(tmp_path, [f"__env__ {repos['pillar']}"])
    assert compiled(env_only, saltenv="feature-x") == {}  # as Salt: nothing, no error
    fallback = pillar_opts(tmp_path, [{f"__env__ {repos['pillar']}": [{"fallback": "dev"}]}])
    assert compiled(fallback, fetch=False, saltenv="feature-x")["who"] == "dev-branch"


def test_not_fetched_is_an_error_naming_the_remote(tmp_path, repos) -> None:
    data = compiled(pillar_opts(tmp_path, [f"master {repos['pillar']}"]), fetch=False)
    (error,) = data["_errors"]
    assert error.startswith("Failed to load ext_pillar git for minion web1: git_pillar remote 'master file://")
    assert "has not been fetched yet" in error and "--fetch" in error


def test_a_bad_root_is_an_error(tmp_path, repos) -> None:
    data = compiled(pillar_opts(tmp_path, [{f"master {repos['pillar']}": [{"root": "nope"}]}]))
    assert "root 'nope' is not a directory of master" in data["_errors"][0]


def test_served_over_git_daemon(tmp_path, daemon) -> None:
    opts = pillar_opts(tmp_path, [f"__env__ {daemon.url('pillar.git')}"])
    assert compiled(opts, saltenv="dev")["who"] == "dev-branch"
