"""runtime/cli/roots_snapshot.py: a fleet compile reads each file and lists each saltenv once."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.errors import CompileError
from compiler.roots import LocalRoots
from runtime.cli.roots_snapshot import SnapshotSource


class Counting(LocalRoots):
    def __init__(self, roots: dict[str, list[str]]):
        super().__init__(roots)
        self.calls: list[tuple] = []

    def get(self, saltenv: str, relpath: str):
        self.calls.append(("get", saltenv, relpath))
        return super().get(saltenv, relpath)

    def list_files(self, saltenv: str) -> list[str]:
        self.calls.append(("list", saltenv))
        return super().list_files(saltenv)


def test_each_file_read_once_and_the_first_version_kept(tmp_path: Path) -> None:
    (tmp_path / "a.sls").write_text("a: 1\n")
    inner = Counting({"base": [str(tmp_path)]})
    snap = SnapshotSource(inner)
    first = snap.get("base", "a.sls")
    (tmp_path / "a.sls").write_text("a: 2\n")
    assert snap.get("base", "a.sls") is first and first.text == "a: 1\n"
    assert snap.get("base", "missing.sls") is None and snap.get("base", "missing.sls") is None
    assert snap.list_files("base") == ["a.sls"] == snap.list_files("base")
    assert snap.saltenvs() == ["base"]
    assert inner.calls == [("get", "base", "a.sls"), ("get", "base", "missing.sls"), ("list", "base")]


def test_errors_are_raised_every_time(tmp_path: Path) -> None:
    snap = SnapshotSource(LocalRoots({"base": [str(tmp_path)]}))
    for _ in range(2):
        with pytest.raises(CompileError, match="outside the roots"):
            snap.get("base", "../etc/passwd")
