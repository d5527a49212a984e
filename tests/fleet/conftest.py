from __future__ import annotations

from pathlib import Path

import pytest

from tests.fleet.fixture import make_repo


@pytest.fixture
def fleet_repo(tmp_path: Path) -> Path:
    """tmp_path holding repo/ (git), saltpan.conf and fleet.yaml (240 minions)."""
    make_repo(tmp_path)
    return tmp_path
