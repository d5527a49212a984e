"""Real git repositories for the gitfs tests, made with the git command line.

``build_repos`` turns ``data/<repo>/<branch>/`` directories into bare
repositories ``<dest>/<repo>.git`` (one branch per directory, the first one
``master``), with tags; ``Worktree`` commits, pushes and force-pushes to one of
them as a developer would; ``GitDaemon`` serves a directory of bare
repositories over git:// on 127.0.0.1 (started and stopped by a fixture).
Dates and names are fixed, so a rebuild gives the same commit ids.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time

from tests.netutil import free_port

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0",
}

# repo -> (branches in order, {tag: branch})
REPOS: dict[str, tuple[list[str], dict[str, str]]] = {
    "states": (["master", "dev"], {"v1.0": "master"}),
    "formulas": (["master"], {}),
    "pillar": (["master", "dev"], {}),
    "extpillar": (["master"], {}),
}


def git(*args: str, cwd: str | None = None) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=60)


def _replace_tree(work: str, src: str) -> None:
    for name in os.listdir(work):
        if name != ".git":
            path = os.path.join(work, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    shutil.copytree(src, work, dirs_exist_ok=True)


def build_repo(name: str, dest: str, data: str = DATA) -> str:
    """data/<name>/<branch>/ -> <dest>/<name>.git; returns the bare repository's path."""
    branches, tags = REPOS[name]
    work = os.path.join(dest, f".work-{name}")
    git("init", "-q", "-b", branches[0], work)
    for index, branch in enumerate(branches):
        if index:
            git("checkout", "-q", "-b", branch, branches[0], cwd=work)
        _replace_tree(work, os.path.join(data, name, branch))
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"{name} {branch}", cwd=work)
    for tag, branch in tags.items():
        git("tag", tag, branch, cwd=work)
    bare = os.path.join(dest, f"{name}.git")
    git("clone", "-q", "--bare", work, bare)
    shutil.rmtree(work)
    return bare


@dataclasses.dataclass(frozen=True)
class Link:
    """A symlink in a repository made by ``new_repo`` (its target, as written)."""

    target: str


def _write_files(work: str, files: dict[str, str | Link]) -> None:
    for rel, content in files.items():
        full = os.path.join(work, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if isinstance(content, Link):
            os.symlink(content.target, full)
        else:
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(content)


def new_repo(dest: str, name: str, branches: dict[str, dict[str, str | Link]]) -> str:
    """A bare repository <dest>/<name>.git with one commit per branch (the first branch is master's
    name, each later branch starts from it); returns its path."""
    work = os.path.join(dest, f".work-{name}")
    names = list(branches)
    git("init", "-q", "-b", names[0], work)
    for index, branch in enumerate(names):
        if index:
            git("checkout", "-q", "-b", branch, names[0], cwd=work)
        _write_files(work, branches[branch])
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"{name} {branch}", cwd=work)
    git("checkout", "-q", names[0], cwd=work)  # the bare repository's HEAD: its first branch
    bare = os.path.join(dest, f"{name}.git")
    git("clone", "-q", "--bare", work, bare)
    shutil.rmtree(work)
    return bare


def build_repos(dest: str, data: str = DATA) -> dict[str, str]:
    """Every repository of REPOS under dest; {name: file:// URL}."""
    os.makedirs(dest, exist_ok=True)
    return {name: "file://" + build_repo(name, dest, data) for name in REPOS}


class Worktree:
    """A clone of a bare repository to change it with."""

    def __init__(self, bare: str, path: str):
        self.bare = bare
        self.path = path
        git("clone", "-q", bare, path)

    def commit(self, branch: str, files: dict[str, str | None], message: str) -> str:
        """Commit files (None removes one) on branch; the new commit's id."""
        git("checkout", "-q", "-B", branch, f"origin/{branch}", cwd=self.path)
        for rel, text in files.items():
            full = os.path.join(self.path, rel)
            if text is None:
                os.remove(full)
                continue
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
        git("add", "-A", cwd=self.path)
        git("commit", "-q", "-m", message, cwd=self.path)
        return self.head()

    def head(self) -> str:
        env = {**os.environ, **GIT_ENV}
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=self.path, env=env, check=True,
                              capture_output=True, text=True, timeout=60).stdout.strip()

    def push(self, branch: str, force: bool = False) -> None:
        git("push", "-q", *(["--force"] if force else []), "origin", f"{branch}:{branch}", cwd=self.path)

    def rewrite(self, branch: str, files: dict[str, str], message: str) -> None:
        """Replace the branch's last commit by another one (what a force-push publishes)."""
        git("checkout", "-q", "-B", branch, f"origin/{branch}", cwd=self.path)
        git("reset", "-q", "--hard", "HEAD~1", cwd=self.path)
        for rel, text in files.items():
            with open(os.path.join(self.path, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        git("add", "-A", cwd=self.path)
        git("commit", "-q", "-m", message, cwd=self.path)


class GitDaemon:
    """``git daemon`` serving base_path over git:// on 127.0.0.1, on a free port."""

    def __init__(self, base_path: str):
        self.base_path = base_path
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, repo: str) -> str:
        return f"git://127.0.0.1:{self.port}/{repo}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={self.base_path}", self.base_path],
            env={**os.environ, **GIT_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import socket

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"git daemon exited with status {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("git daemon did not start listening within 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
