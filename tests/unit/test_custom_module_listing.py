"""The custom module directories are listed again only when they change (runtime/modules/custom.py):
a job asks twice whether custom modules are synced, and listing the directories each time was 6%
of a minion's CPU per test.ping."""

from __future__ import annotations

import os
import time
from pathlib import Path

from runtime.modules import custom


def _counting_listdir(monkeypatch) -> list[str]:
    listings: list[str] = []
    real = os.listdir

    def listdir(path: str) -> list[str]:
        listings.append(path)
        return real(path)

    monkeypatch.setattr(custom.os, "listdir", listdir)
    return listings


def _age(directory: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(directory, (past, past))


def test_a_settled_directory_is_listed_once_and_again_when_it_changes(tmp_path: Path, monkeypatch) -> None:
    opts = {"cachedir": str(tmp_path)}
    modules = tmp_path / "extmods" / "modules"
    assert not custom.has_modules(opts)                       # no directory at all
    modules.mkdir(parents=True)
    (modules / "mine.py").write_text("def f():\n    return 1\n")
    _age(modules, 60)
    assert custom.has_modules(opts)
    listings = _counting_listdir(monkeypatch)
    for _ in range(5):
        assert custom._module_files(str(tmp_path / "extmods"), "modules") == ["mine.py"]
    assert listings == []                                     # kept: the directory did not move
    (modules / "other.py").write_text("")                     # added: the mtime moves
    assert custom._module_files(str(tmp_path / "extmods"), "modules") == ["mine.py", "other.py"]
    assert len(listings) == 1
    (modules / "mine.py").unlink()
    (modules / "other.py").unlink()
    assert not custom.has_modules(opts)                       # removed: seen at once


def test_a_directory_that_just_changed_is_listed_every_time(tmp_path: Path, monkeypatch) -> None:
    """An entry added within the timestamp's granularity of a listing would not move the mtime
    it was kept under: a directory changed in the last seconds is not kept."""
    base = tmp_path / "extmods"
    (base / "modules").mkdir(parents=True)
    (base / "modules" / "fresh.py").write_text("")
    listings = _counting_listdir(monkeypatch)
    for _ in range(3):
        assert custom._module_files(str(base), "modules") == ["fresh.py"]
    assert len(listings) == 3
