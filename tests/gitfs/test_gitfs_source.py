"""gitfs as a FileSource over real bare repositories (file:// and git daemon): saltenvs, root, mountpoint, order."""

from __future__ import annotations

import os

import pytest

from runtime import pipeline
from runtime.gitfs.remotes import gitfs_remotes
from runtime.gitfs.repo import CachedRepo, cache_root
from runtime.gitfs.source import BackendChain, GitfsSource
from tests.gitfs.gitrepos import Worktree


def gitfs_opts(tmp_path, remotes: list, **extra) -> dict:
    opts = {"cachedir": str(tmp_path / "cache"), "fileserver_backend": ["gitfs"], "gitfs_remotes": remotes,
            "file_roots": {}}
    opts.update(extra)
    return opts


def fetched_source(opts: dict) -> BackendChain:
    for remote in gitfs_remotes(opts):
        result = CachedRepo(remote, cache_root(opts["cachedir"], "gitfs")).fetch()
        assert result.ok, result.error
    source = pipeline.file_source(opts)
    assert isinstance(source, BackendChain)
    return source


def test_branches_and_tags_are_saltenvs_with_root_and_mountpoint(tmp_path, repos) -> None:
    opts = gitfs_opts(tmp_path, [{repos["states"]: [{"root": "salt"}]},
                                 {repos["formulas"]: [{"mountpoint": "salt://formulas"}]}])
    source = fetched_source(opts)
    assert source.saltenvs() == ["base", "dev", "v1.0"]
    assert "web/init.sls" in source.list_files("base")
    assert "formulas/nginx/init.sls" in source.list_files("base")  # the mountpoint
    assert not any(p.startswith("salt/") for p in source.list_files("base"))  # the root is not served
    base = source.get("base", "web/init.sls")
    dev = source.get("dev", "web/init.sls")
    assert base is not None and dev is not None and "sites-enabled" in base.text and "dev branch" in dev.text
    assert base.display.endswith("states.git@master:salt/web/init.sls")
    assert source.get("v1.0", "web/init.sls").text == base.text  # the tag is master's first commit
    assert source.get("base", "nginx/init.sls") is None  # only under its mountpoint
    fetched = source.fetch("base", "files/motd")
    assert fetched is not None and fetched.data.startswith(b"motd from git master") and fetched.mode == 0o644


def test_lowstate_of_two_saltenvs_from_branches(tmp_path, repos) -> None:
    opts = gitfs_opts(tmp_path, [{repos["states"]: [{"root": "salt"}]},
                                 {repos["formulas"]: [{"mountpoint": "salt://formulas"}]}])
    fetched_source(opts)
    grains = {"id": "web1", "role": "web", "os_family": "RedHat"}
    result = pipeline.compile_states(opts, "web1", grains, {"site": {"name": "w"}}, "lowstate")
    assert not result.errors
    ids = [(c["__env__"], c["__id__"]) for c in result.data]
    assert ("base", "web_site_base") in ids and ("dev", "web_site_dev") in ids and ("base", "nginx_formula") in ids
    pkg = next(c for c in result.data if c["__id__"] == "web_package")
    assert pkg["name"] == "nginx"  # map.jinja imported from the git tree, with the grains
    only_dev = pipeline.compile_states(opts, "web1", grains, {}, "lowstate", saltenv="dev")
    assert {c["__env__"] for c in only_dev.data} == {"dev"}


@pytest.mark.parametrize(("strategy", "base_sls", "dev_sls"), [
    ("merge", ["common"], ["db"]),
    ("same", ["common"], ["web"]),
    # every top file of every saltenv counts, the v1.0 tag's too (it is master before this commit)
    ("merge_all", ["common", "web", "formulas.nginx"], ["db", "web"]),
])
def test_top_file_merging_strategy_with_envs_from_gitfs(tmp_path, repos, strategy, base_sls, dev_sls) -> None:
    """master's top file also has a dev section; the dev branch's top file has its own (web)."""
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    work.commit("master", {"salt/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - db\n"}, "dev in base")
    work.push("master")
    opts = gitfs_opts(tmp_path, [{repos["states"]: [{"root": "salt"}]}], top_file_merging_strategy=strategy)
    fetched_source(opts)
    top = pipeline.compile_states(opts, "web1", {"id": "web1", "role": "web"}, {}, "top")
    assert top.data == {"base": base_sls, "dev": dev_sls}


def test_roots_and_gitfs_in_backend_order(tmp_path, repos) -> None:
    roots = tmp_path / "roots"
    (roots / "files").mkdir(parents=True)
    (roots / "files" / "motd").write_text("from roots\n")
    (roots / "only_roots.sls").write_text("x: {test.nop: []}\n")
    remotes = [{repos["states"]: [{"root": "salt"}]}]
    for order, winner in ((["roots", "gitfs"], b"from roots\n"), (["gitfs", "roots"], b"motd from git")):
        opts = gitfs_opts(tmp_path, remotes, fileserver_backend=order, file_roots={"base": [str(roots)]})
        source = fetched_source(opts)
        assert source.fetch("base", "files/motd").data.startswith(winner)
        assert source.get("base", "only_roots.sls") is not None  # envs and files are the union
        assert "only_roots.sls" in source.list_files("base") and "web/init.sls" in source.list_files("base")
    opts = gitfs_opts(tmp_path, remotes, fileserver_backend=["gitfs"], file_roots={"base": [str(roots)]})
    assert fetched_source(opts).get("base", "only_roots.sls") is None  # roots not listed: not served


def test_first_remote_with_the_file_wins(tmp_path, repos) -> None:
    work = Worktree(repos["formulas"][len("file://"):], str(tmp_path / "work"))
    work.commit("master", {"files/motd": "motd from formulas\n"}, "motd")
    work.push("master")
    for remotes, winner in (([{repos["states"]: [{"root": "salt"}]}, repos["formulas"]], b"motd from git"),
                            ([repos["formulas"], {repos["states"]: [{"root": "salt"}]}], b"motd from formulas")):
        source = fetched_source(gitfs_opts(tmp_path, remotes))
        assert source.fetch("base", "files/motd").data.startswith(winner)


def test_saltenv_mapping_whitelist_fallback_and_commit_ids(tmp_path, repos) -> None:
    opts = gitfs_opts(tmp_path, [{repos["states"]: [{"root": "salt"}, {"saltenv": [{"qa": [{"ref": "dev"}]}]},
                                                    {"fallback": "master"}]}],
                      gitfs_saltenv_blacklist=["v*"])
    source = fetched_source(opts)
    assert source.saltenvs() == ["base", "qa"]  # dev is served as qa; tags blacklisted
    assert "dev branch" in source.get("qa", "web/init.sls").text
    assert "sites-enabled" in source.get("nosuchenv", "web/init.sls").text  # the fallback branch
    repo = CachedRepo(gitfs_remotes(opts)[0], cache_root(opts["cachedir"], "gitfs"))
    sha = str(repo.commit("dev").id)
    assert "dev branch" in source.get(sha, "web/init.sls").text  # a commit id is a saltenv too


def test_symlinks_inside_the_tree_are_followed_and_escapes_refused(tmp_path, repos) -> None:
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    os.symlink("web/init.sls", os.path.join(work.path, "salt", "alias.sls"))
    os.symlink("../../etc/passwd", os.path.join(work.path, "salt", "escape.sls"))
    work.commit("master", {}, "links")
    work.push("master")
    source = fetched_source(gitfs_opts(tmp_path, [{repos["states"]: [{"root": "salt"}]}]))
    assert source.get("base", "alias.sls").text == source.get("base", "web/init.sls").text
    assert source.get("base", "escape.sls") is None


def test_served_over_git_daemon(tmp_path, daemon) -> None:
    opts = gitfs_opts(tmp_path, [{daemon.url("states.git"): [{"root": "salt"}]}])
    source = fetched_source(opts)
    assert source.saltenvs() == ["base", "dev", "v1.0"]
    assert "dev branch" in source.get("dev", "web/init.sls").text


def test_an_unfetched_remote_is_reported_not_crashed(tmp_path, repos) -> None:
    opts = gitfs_opts(tmp_path, [repos["formulas"]])
    source = pipeline.file_source(opts)
    assert source.saltenvs() == [] and source.get("base", "nginx/init.sls") is None
    (problem,) = source.problems()
    assert "gitfs remote 'file://" in problem and "has not been fetched yet" in problem and "--fetch" in problem


def test_without_gitfs_the_file_source_is_file_roots(tmp_path) -> None:
    from compiler.roots import LocalRoots

    assert isinstance(pipeline.file_source({"file_roots": {"base": [str(tmp_path)]}}), LocalRoots)
    assert isinstance(GitfsSource([], str(tmp_path)).saltenvs(), list)
