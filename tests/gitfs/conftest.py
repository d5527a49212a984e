"""Fixtures: the case's bare repositories (built per test), and a git daemon serving them on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.gitfs.gitrepos import GitDaemon, build_repos


@pytest.fixture
def repos(tmp_path) -> dict[str, str]:
    """{name: file:// URL} of fresh bare repositories (states, formulas, pillar, extpillar)."""
    return build_repos(str(tmp_path / "repos"))


@pytest.fixture
def daemon(repos: dict[str, str]) -> Iterator[GitDaemon]:
    """git daemon over the repositories of ``repos`` (git://127.0.0.1:PORT/<name>.git)."""
    served = GitDaemon(os.path.dirname(repos["states"][len("file://"):]))
    served.start()
    try:
        yield served
    finally:
        served.stop()
