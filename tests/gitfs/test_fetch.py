"""Fetching remotes into the cache: the lock, unreachable remotes, force-pushes, damaged caches, credentials."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import threading
import time

from runtime.gitfs import lock
from runtime.gitfs.remotes import gitfs_remotes
from runtime.gitfs.repo import CachedRepo, cache_root
from runtime.gitfs.source import GitfsSource
from tests.gitfs.gitrepos import Worktree
from tests.netutil import free_port


def cached(tmp_path, url: str, **params) -> CachedRepo:
    entry = {url: [{k: v} for k, v in params.items()]} if params else url
    (remote,) = gitfs_remotes({"gitfs_remotes": [entry]})
    return CachedRepo(remote, cache_root(str(tmp_path / "cache"), "gitfs"))


def motd(repo: CachedRepo, branch: str = "master") -> bytes:
    commit = repo.commit(branch)
    assert commit is not None
    return repo.require()[commit.tree["salt/files/motd"].id].data


def test_first_fetch_clones_then_an_update_is_seen(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"])
    first = repo.fetch()
    assert first.ok and first.changed and repo.branches() == ["dev", "master"] and repo.tags() == ["v1.0"]
    again = repo.fetch()
    assert again.ok and not again.changed and again.summary().endswith("up to date")
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    work.commit("master", {"salt/files/motd": "second motd\n"}, "motd 2")
    work.push("master")
    assert motd(repo) != b"second motd\n"  # nothing changes before a fetch
    assert repo.fetch().changed and motd(repo) == b"second motd\n"
    assert os.path.isfile(os.path.join(repo.dir, "repo.git", "HEAD"))  # <cachedir>/gitfs/<hash>/repo.git
    assert os.path.dirname(repo.dir) == str(tmp_path / "cache" / "gitfs")


def test_unreachable_remote_keeps_the_last_good_revision(tmp_path, daemon) -> None:
    repo = cached(tmp_path, daemon.url("states.git"))
    assert repo.fetch().ok
    before = motd(repo)
    daemon.stop()
    result = repo.fetch()
    assert not result.ok and not result.changed
    assert result.summary().startswith(f"gitfs remote '{daemon.url('states.git')}': fetch failed:")
    assert any("serving the last good revision" in note for note in result.notes)
    assert motd(repo) == before  # still served
    assert repo.state()["error"] == result.error
    source = GitfsSource([repo.remote], os.path.dirname(repo.dir))
    assert source.saltenvs() == ["base", "dev", "v1.0"] and source.problems() == []


def test_a_remote_that_never_answered_is_an_error_naming_it(tmp_path) -> None:
    url = f"git://127.0.0.1:{free_port()}/states.git"
    repo = cached(tmp_path, url)
    result = repo.fetch()
    assert not result.ok and url in result.summary()
    source = GitfsSource([repo.remote], os.path.dirname(repo.dir))
    assert source.saltenvs() == []


def test_force_pushed_branch_is_followed_and_reported(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"])
    assert repo.fetch().ok
    old = str(repo.commit("dev").id)
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    work.rewrite("dev", {"salt/files/motd": "rewritten history\n"}, "rewritten")
    work.push("dev", force=True)
    result = repo.fetch()
    assert result.ok and result.changed
    (note,) = result.notes
    assert f"branch 'dev' was force-pushed ({old[:10]} is not an ancestor of" in note
    assert motd(repo, "dev") == b"rewritten history\n"
    assert motd(repo, "master").startswith(b"motd from git master")


def test_a_damaged_cache_is_reported_then_cloned_again(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"])
    assert repo.fetch().ok
    objects = os.path.join(repo.git_dir, "objects")
    shutil.rmtree(objects)
    os.mkdir(objects)
    fresh = CachedRepo(repo.remote, os.path.dirname(repo.dir))
    source = GitfsSource([repo.remote], os.path.dirname(repo.dir))
    assert source.saltenvs() == []
    (problem,) = source.problems()
    assert "the cached clone at" in problem and "is damaged" in problem and "--fetch" in problem
    result = fresh.fetch()
    assert result.ok, result.error
    assert any("damaged" in note and "cloned again" in note for note in result.notes)
    assert motd(fresh).startswith(b"motd from git master")
    assert source.saltenvs() == ["base", "dev", "v1.0"] and source.problems() == []


def test_garbage_in_the_cache_directory_is_recovered(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"])
    os.makedirs(repo.git_dir)
    with open(os.path.join(repo.git_dir, "HEAD"), "w") as fh:
        fh.write("not a ref\n")
    result = repo.fetch()
    assert result.ok and any("cloned again" in n for n in result.notes)
    assert repo.branches() == ["dev", "master"]


def test_credentials_stay_out_of_errors(tmp_path) -> None:
    url = f"https://deploy:t0ps3cret@127.0.0.1:{free_port()}/states.git"
    repo = cached(tmp_path, url, password="hunter2pass", user="deploy")
    result = repo.fetch()
    assert not result.ok
    text = " ".join([result.summary(), *result.notes, str(repo.state())])
    assert "t0ps3cret" not in text and "hunter2pass" not in text and "127.0.0.1" in text
    plain = cached(tmp_path, "http://127.0.0.1:1/x.git", user="u", password="hunter2pass")
    refused = plain.fetch()
    assert not refused.ok and "plain http is refused" in refused.error and "hunter2pass" not in refused.error


def test_the_lock_keeps_a_second_fetch_waiting(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"])
    os.makedirs(repo.dir, exist_ok=True)
    with lock.held(repo.lock_path, 1):
        timed_out = repo.fetch(lock_wait=0.3)
        assert not timed_out.ok and "another process has been fetching it" in timed_out.error
        results = []
        waiter = threading.Thread(target=lambda: results.append(repo.fetch(lock_wait=30)))
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive() and not results  # blocked while we hold the lock
    waiter.join(30)
    assert results and results[0].ok


def _fetch_in_process(args: tuple[str, str, str]) -> tuple[bool, bool, str | None]:
    url, cachedir, _ = args
    (remote,) = gitfs_remotes({"gitfs_remotes": [url]})
    result = CachedRepo(remote, cachedir).fetch()
    return result.ok, result.skipped, result.error


def test_concurrent_processes_fetch_one_repository_safely(tmp_path, repos) -> None:
    cachedir = cache_root(str(tmp_path / "cache"), "gitfs")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        outcomes = pool.map(_fetch_in_process, [(repos["states"], cachedir, str(i)) for i in range(4)])
    assert all(ok for ok, _, _ in outcomes), outcomes
    repo = cached(tmp_path, repos["states"])
    assert repo.branches() == ["dev", "master"] and motd(repo).startswith(b"motd from git master")


def test_update_interval(tmp_path, repos) -> None:
    repo = cached(tmp_path, repos["states"], update_interval=300)
    assert repo.due()
    repo.fetch()
    assert not repo.due() and repo.due(time.time() + 301)
