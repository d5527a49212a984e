"""The ten real-world formulas of tests/realworld/cases as bench workloads (shared by both helpers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

CASES = Path(__file__).resolve().parent.parent / "tests" / "realworld" / "cases"


def formulas() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if (p / "config.yaml").is_file())


def case(name: str) -> tuple[str, dict[str, Any], dict[str, list[str]], dict[str, list[str]]]:
    """(minion id, grains, pillar_roots, file_roots) of one formula case, paths absolute."""
    root = CASES / name
    config = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8")) or {}
    grains = yaml.safe_load((root / "grains.yaml").read_text(encoding="utf-8")) or {}

    def absolute(roots: dict[str, list[str]]) -> dict[str, list[str]]:
        return {env: [str((root / d).resolve()) for d in dirs] for env, dirs in roots.items()}

    minion_id = str(config.get("id") or grains.get("id") or name)
    grains = dict(grains, id=minion_id)
    return minion_id, grains, absolute(config["pillar_roots"]), absolute(config["file_roots"])


def canonical(data: Any) -> Any:
    return json.loads(json.dumps(data, sort_keys=True, default=str))
