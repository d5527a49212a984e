"""Fixtures for the state-module tests: a sandbox directory, a roots tree and StateContexts."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any

import jinja2
import pytest

from runtime.states import StateContext


@pytest.fixture(autouse=True)
def _umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def sandbox(tmp_path) -> str:
    path = tmp_path / "sandbox"
    path.mkdir()
    return str(path)


@pytest.fixture
def roots(tmp_path) -> str:
    path = tmp_path / "roots"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_ctx(roots: str, tmp_path) -> Callable[..., StateContext]:
    """StateContext factory: salt:// served from ``roots``, Jinja templates with grains/pillar."""

    def fetch(url: str, saltenv: str):
        path = os.path.join(roots, url[len("salt://"):])
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            return handle.read(), path, stat.S_IMODE(os.stat(path).st_mode)

    def factory(test: bool = False, grains: dict[str, Any] | None = None,
                pillar: dict[str, Any] | None = None, **extra: Any) -> StateContext:
        grains = {"id": "minion1", "os": "Debian", **(grains or {})}
        pillar = pillar or {}

        def render(text: str, engine: str, context: dict[str, Any], display: str) -> str:
            if engine != "jinja":
                raise ValueError(f"unknown template engine {engine}")
            env = jinja2.Environment(loader=jinja2.FileSystemLoader(roots), undefined=jinja2.StrictUndefined,
                                     keep_trailing_newline=True)
            return env.from_string(text).render({"grains": grains, "pillar": pillar, **context})

        def list_files(saltenv: str) -> list[str]:
            return sorted(os.path.relpath(os.path.join(root, f), roots)
                          for root, _dirs, files in os.walk(roots) for f in files)

        extra.setdefault("list_files", list_files)
        opts = {"cachedir": str(tmp_path / "cache"), **extra.pop("opts", {})}
        return StateContext(test=test, grains=grains, pillar=pillar, fetch_file=fetch, render_template=render,
                            opts=opts, **extra)

    return factory


@pytest.fixture
def ctx(make_ctx) -> StateContext:
    return make_ctx()


@pytest.fixture
def tctx(make_ctx) -> StateContext:
    return make_ctx(test=True)


@pytest.fixture
def throwaway_user(tmp_path):
    """A real user ``spt<random>`` with its home under tmp_path, removed afterwards: (name, home)."""
    import pwd
    import shutil
    import subprocess
    import uuid

    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("optional: needs root and useradd (a throwaway user)")
    name = f"spt{uuid.uuid4().hex[:6]}"
    home = tmp_path / "home" / name
    home.parent.mkdir(parents=True, exist_ok=True)
    home.parent.chmod(0o755)
    tmp_path.chmod(0o755)
    subprocess.run(["useradd", "-m", "-d", str(home), "-s", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield name, str(home)
    finally:
        subprocess.run(["userdel", "-r", name], capture_output=True)
        try:
            pwd.getpwnam(name)
        except KeyError:
            pass
        else:
            raise AssertionError(f"throwaway user {name} is still there")
