"""Fleet sources: the grains of many minions.

A fleet is a YAML/JSON file mapping each minion id to its grains
(``{web01: {os: Debian, ...}}``, or the bench-fleet form ``{minions: [{id, grains}]}``),
or a directory of ``<id>.yaml`` / ``<id>.json`` grains files.
"""

from __future__ import annotations

import json
import os
from typing import Any

import yaml


class FleetError(Exception):
    pass


def _parse(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise FleetError(f"cannot read fleet file {path}: {exc.strerror}") from None
    try:
        if path.endswith(".json"):
            return json.loads(text)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except (ValueError, yaml.YAMLError) as exc:
        raise FleetError(f"{path}: not valid YAML/JSON: {exc}") from None


def load_fleet(source: str) -> dict[str, dict[str, Any]]:
    """{minion_id: grains} from a fleet file or directory."""
    if os.path.isdir(source):
        fleet: dict[str, dict[str, Any]] = {}
        for name in sorted(os.listdir(source)):
            stem, ext = os.path.splitext(name)
            if ext not in (".yaml", ".yml", ".json"):
                continue
            data = _parse(os.path.join(source, name)) or {}
            if not isinstance(data, dict):
                raise FleetError(f"{os.path.join(source, name)}: grains must be a mapping")
            fleet[stem] = data
        return fleet
    data = _parse(source) or {}
    if isinstance(data, dict) and isinstance(data.get("minions"), list):
        out = {}
        for item in data["minions"]:
            if not isinstance(item, dict) or "id" not in item:
                raise FleetError(f"{source}: each entry of `minions` needs an `id`")
            out[str(item["id"])] = dict(item.get("grains") or {})
        return out
    if not isinstance(data, dict) or not all(isinstance(v, dict) or v is None for v in data.values()):
        raise FleetError(f"{source}: a fleet file maps each minion id to a mapping of grains")
    return {str(k): dict(v or {}) for k, v in data.items()}
