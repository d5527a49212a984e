"""git.latest against a loopback repository (a bare repo in the sandbox, file:// URL), and
git.config_set/unset. Expected comments and changes are Salt 3008.3's (captured the same way)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runtime.states import StateContext, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
RUN, TEST = StateContext(), StateContext(test=True)
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def _git(*args: str, cwd: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    _git("init", "-q", "-b", "main", cwd=str(work))
    (work / "README").write_text("one\n")
    _git("add", "README", cwd=str(work))
    _git("commit", "-q", "-m", "one", cwd=str(work))
    _git("tag", "v1", cwd=str(work))
    bare = tmp_path / "repo.git"
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=str(tmp_path))

    def commit(text: str) -> str:
        (work / "README").write_text(text)
        _git("commit", "-q", "-am", text.strip(), cwd=str(work))
        _git("push", "-q", str(bare), "main", cwd=str(work))
        return _git("rev-parse", "HEAD", cwd=str(work))

    return f"file://{bare}", commit, _git("rev-parse", "HEAD", cwd=str(work))


def test_latest_clones_updates_and_stays_put(upstream, sandbox):
    url, commit, first = upstream
    target = os.path.join(sandbox, "clone")
    ret = git.latest(TEST, url, target=target)
    assert ret == {"name": url, "changes": {"new": f"{url} => {target}"}, "result": None,
                   "comment": f"Repository {url} would be cloned to {target}"}
    assert not os.path.exists(target)
    ret = git.latest(RUN, url, target=target)
    assert ret == {"name": url, "result": True, "comment": f"{url} cloned to {target}",
                   "changes": {"new": f"{url} => {target}", "revision": {"old": None, "new": first}}}
    again = git.latest(RUN, url, target=target)
    assert (again["changes"], again["comment"]) == ({}, f"Repository {target} is up-to-date")

    second = commit("two\n")
    ret = git.latest(TEST, url, target=target)
    assert ret["result"] is None and ret["changes"] == {"revision": {"old": first, "new": second}}
    assert ret["comment"] == (f"Remote 'origin' would be fetched. Repository would be updated from {first[:7]} "
                              f"to {second[:7]}.")
    assert _git("rev-parse", "HEAD", cwd=target) == first
    ret = git.latest(RUN, url, target=target)
    assert ret["changes"] == {"revision": {"old": first, "new": second}}
    assert ret["comment"] == (f"{url} was fetched, resulting in updated refs. Repository was fast-forwarded to "
                              f"remote HEAD ({second[:7]}).")
    with open(os.path.join(target, "README")) as handle:
        assert handle.read() == "two\n"
    assert git.latest(RUN, url, target=target)["changes"] == {}


def test_latest_tag_branch_and_diverged(upstream, sandbox):
    url, commit, first = upstream
    tagged = os.path.join(sandbox, "tagged")
    ret = git.latest(RUN, url, target=tagged, rev="v1")
    assert ret["comment"] == f"{url} cloned to {tagged}. Tracking branch was unset."
    branch = os.path.join(sandbox, "branch")
    git.latest(RUN, url, target=branch, rev="main", branch="main")
    (open(os.path.join(branch, "README"), "w")).write("local\n")
    _git("commit", "-q", "-am", "local", cwd=branch)
    second = commit("two\n")
    ret = git.latest(RUN, url, target=branch, rev="main", branch="main")
    assert ret["result"] is False and ret["comment"].startswith(
        f"Repository would be updated to {second[:7]}, but this is not a fast-forward merge.")
    ret = git.latest(RUN, url, target=branch, rev="main", branch="main", force_reset=True)
    assert ret["result"] is True and _git("rev-parse", "HEAD", cwd=branch) == second
    assert git.latest(RUN, url, target=tagged, rev="v1")["changes"] == {}


def test_latest_failures(upstream, sandbox, tmp_path):
    url, _commit, _first = upstream
    ret = git.latest(RUN, url, target=os.path.join(sandbox, "x"), identity="/nonexistent/id_rsa")
    assert ret["comment"] == ("Failed to check remote refs: Unable to authenticate using identity file:\n\n"
                              "The following identity file(s) were not found: /nonexistent/id_rsa")
    ret = git.latest(TEST, f"file://{tmp_path}/nope.git", target=os.path.join(sandbox, "x"))
    assert ret["result"] is False and ret["comment"].startswith("Failed to check remote refs: fatal: ")
    occupied = os.path.join(sandbox, "occupied")
    os.makedirs(occupied)
    open(os.path.join(occupied, "f"), "w").close()
    ret = git.latest(RUN, url, target=occupied)
    assert ret["result"] is False and ret["comment"].startswith(f"Target '{occupied}' exists, is non-empty")
    ret = git.latest(RUN, url, target=occupied, force_clone=True)
    assert ret["result"] is True and os.path.exists(os.path.join(occupied, "README"))
    assert git.latest(RUN, url, target=os.path.join(sandbox, "y"), rev="nope")["comment"] == (
        "No revision matching 'nope' exists in the remote repository")


def test_config_set_and_unset(upstream, sandbox):
    url, _commit, _first = upstream
    repo = os.path.join(sandbox, "cfg")
    git.latest(RUN, url, target=repo)
    ret = git.config_set(TEST, "user.name", value="Saltpan", repo=repo)
    assert ret["result"] is None and ret["changes"] == {"user.name": {"old": None, "new": "Saltpan"}}
    assert git.config_set(RUN, "user.name", value="Saltpan", repo=repo)["changes"] == {
        "user.name": {"old": None, "new": "Saltpan"}}
    assert _git("config", "user.name", cwd=repo) == "Saltpan"
    assert git.config_set(RUN, "user.name", value="Saltpan", repo=repo)["changes"] == {}
    ret = git.config_set(RUN, "remote.origin.push", multivar=["a", "b"], repo=repo)
    assert ret["changes"] == {"remote.origin.push": {"old": None, "new": ["a", "b"]}}
    assert git.config_unset(TEST, "user.name", repo=repo)["result"] is None
    assert git.config_unset(RUN, "user.name", repo=repo)["changes"] == {"user.name": {"old": ["Saltpan"],
                                                                                     "new": None}}
    assert git.config_unset(RUN, "user.name", repo=repo)["comment"] == "No matching keys are set"
    # the users formula's case: a user that does not exist yet fails, as in Salt
    assert git.config_set(RUN, "user.name", value="x", user="no-such-user-x", **{"global": True})["result"] is False
