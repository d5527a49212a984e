"""The master's file server over roots and gitfs (fileserver_backend order), on real bare repositories."""

from __future__ import annotations

import hashlib
import os

import pytest

from runtime import pipeline
from runtime.gitfs.remotes import gitfs_remotes
from runtime.gitfs.repo import CachedRepo, cache_root
from runtime.master.fileserver import CHUNK, FileServer, FileServerError
from tests.gitfs.gitrepos import Worktree


def fetch_all(opts: dict) -> None:
    for remote in gitfs_remotes(opts):
        result = CachedRepo(remote, cache_root(opts["cachedir"], "gitfs")).fetch()
        assert result.ok, result.error


def server_for(tmp_path, repos: dict, backends: list[str], **extra) -> tuple[FileServer, dict]:
    roots = tmp_path / "roots"
    (roots / "files").mkdir(parents=True, exist_ok=True)
    (roots / "files" / "motd").write_text("motd from file_roots\n")
    opts = {"cachedir": str(tmp_path / "cache"), "fileserver_backend": backends,
            "file_roots": {"base": [str(roots)]},
            "gitfs_remotes": [{repos["states"]: [{"root": "salt"}]},
                              {repos["formulas"]: [{"mountpoint": "salt://formulas"}]}]}
    opts.update(extra)
    fetch_all(opts)
    return FileServer(pipeline.file_source(opts)), opts


def download(server: FileServer, path: str, saltenv: str) -> bytes:
    data, loc = b"", 0
    while True:
        chunk = server.serve(path, saltenv, loc)
        data += chunk["data"]
        loc = chunk["loc"]
        if chunk["done"]:
            return data


def test_backends_in_order_and_saltenvs_from_branches(tmp_path, repos) -> None:
    server, _ = server_for(tmp_path, repos, ["roots", "gitfs"])
    assert server.envs() == ["base", "dev", "v1.0"]
    assert download(server, "files/motd", "base") == b"motd from file_roots\n"  # roots first
    assert b"dev branch" in download(server, "salt://web/init.sls", "dev")  # roots has no dev
    assert download(server, "files/motd", "dev").startswith(b"motd from git")
    gitfirst, _ = server_for(tmp_path, repos, ["gitfs", "roots"])
    assert download(gitfirst, "files/motd", "base").startswith(b"motd from git master")
    found = gitfirst.find("files/motd", "base")
    data = download(gitfirst, "files/motd", "base")
    assert found["hsum"] == hashlib.sha256(data).hexdigest() and found["size"] == len(data)
    assert found["mode"] == 0o644 and found["saltenv"] == "base" and found["path"] == "files/motd"
    assert gitfirst.hash("files/motd", "base") == {"hsum": found["hsum"], "hash_type": "sha256"}
    listing = gitfirst.file_list("base")
    assert "web/init.sls" in listing and "formulas/nginx/init.sls" in listing and "files/motd" in listing
    assert not any(p.startswith("salt/") for p in listing)  # the root is the top of salt://
    assert gitfirst.file_list("base", "formulas/") == ["formulas/nginx/init.sls"]
    assert "formulas/nginx" in gitfirst.dir_list("base")


def test_paths_outside_root_mountpoint_or_tree_are_not_served(tmp_path, repos) -> None:
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    os.symlink("web/init.sls", os.path.join(work.path, "salt", "alias.sls"))
    os.symlink("../README.md", os.path.join(work.path, "salt", "outside-root.sls"))
    os.symlink("/etc/passwd", os.path.join(work.path, "salt", "absolute.sls"))
    with open(os.path.join(work.path, "README.md"), "w") as fh:
        fh.write("not under the root\n")
    with open(os.path.join(work.path, "salt", "run.sh"), "w") as fh:
        fh.write("#!/bin/sh\necho hi\n")
    os.chmod(os.path.join(work.path, "salt", "run.sh"), 0o755)
    work.commit("master", {}, "links, a file outside the root, a script")
    work.push("master")
    server, _ = server_for(tmp_path, repos, ["gitfs"])
    assert download(server, "alias.sls", "base") == download(server, "web/init.sls", "base")
    for path in ("outside-root.sls", "absolute.sls", "README.md", "../README.md", "nginx/init.sls"):
        try:
            assert server.find(path, "base") == {} and server.serve(path, "base") == {}
        except FileServerError as exc:
            assert exc.reason == "access_denied"  # '..' is refused before any backend looks
    listing = server.file_list("base")
    assert "alias.sls" in listing and "outside-root.sls" not in listing and "absolute.sls" not in listing
    assert server.find("run.sh", "base")["mode"] == 0o755
    for bad in ("/etc/passwd", "a/../../b", "a\\b", "x\x00y"):
        with pytest.raises(FileServerError) as refused:
            server.find(bad, "base")
        assert refused.value.reason == "access_denied"
    for env, reason in (("nosuch", "unknown_saltenv"), ("../base", "bad_saltenv"), (3, "bad_saltenv")):
        with pytest.raises(FileServerError) as refused:
            server.find("top.sls", env)
        assert refused.value.reason == reason


def test_commit_ids_are_saltenvs_and_chunks_of_a_large_blob(tmp_path, repos) -> None:
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    big = "".join(f"line {n:08d}\n" for n in range(CHUNK // 7))  # more than two chunks
    work.commit("master", {"salt/files/big.txt": big}, "a large file")
    work.push("master")
    server, opts = server_for(tmp_path, repos, ["gitfs"])
    assert download(server, "files/big.txt", "base") == big.encode()
    sha = str(CachedRepo(gitfs_remotes(opts)[0], cache_root(opts["cachedir"], "gitfs")).commit("dev").id)
    assert download(server, "web/init.sls", sha) == download(server, "web/init.sls", "dev")
    with pytest.raises(FileServerError):
        server.serve("files/big.txt", "base", len(big) + 1)


def test_a_fetch_is_served_without_a_restart(tmp_path, repos) -> None:
    server, opts = server_for(tmp_path, repos, ["gitfs"])
    before = server.find("web/init.sls", "dev")
    work = Worktree(repos["states"][len("file://"):], str(tmp_path / "work"))
    work.commit("dev", {"salt/new.sls": "new_state:\n  test.nop\n"}, "a new file on dev")
    work.push("dev")
    assert server.find("new.sls", "dev") == {}
    fetch_all(opts)
    assert download(server, "new.sls", "dev") == b"new_state:\n  test.nop\n"
    assert server.find("web/init.sls", "dev") == before
    assert "new.sls" not in server.file_list("base")


def test_an_unfetched_or_damaged_remote_serves_nothing_and_the_others_serve(tmp_path, repos) -> None:
    server, opts = server_for(tmp_path, repos, ["gitfs"])
    formulas = CachedRepo(gitfs_remotes(opts)[1], cache_root(opts["cachedir"], "gitfs"))
    for name in os.listdir(os.path.join(formulas.git_dir, "objects", "pack")):
        os.remove(os.path.join(formulas.git_dir, "objects", "pack", name))
    for sub in os.listdir(os.path.join(formulas.git_dir, "objects")):
        path = os.path.join(formulas.git_dir, "objects", sub)
        if len(sub) == 2 and os.path.isdir(path):
            for name in os.listdir(path):
                os.remove(os.path.join(path, name))
    os.utime(formulas.state_path)  # readers reopen the clone
    fresh = FileServer(pipeline.file_source(opts))
    assert fresh.find("formulas/nginx/init.sls", "base") == {}
    assert fresh.find("web/init.sls", "base")["size"] > 0
    assert "formulas/nginx/init.sls" not in fresh.file_list("base")
