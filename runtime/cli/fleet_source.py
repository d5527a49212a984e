"""Fleet sources: the grains of many minions.

A fleet is a YAML/JSON file mapping each minion id to its grains
(``{web01: {os: Debian, ...}}``, or the bench-fleet form ``{minions: [{id, grains}]}``),
or a directory of ``<id>.yaml`` / ``<id>.json`` grains files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
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


def load_cache_fleet(master_opts: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{minion_id: grains} from the master's minion data cache (the grains each minion last reported)."""
    import sqlite3

    from runtime.config import ConfigError
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    opts = dict(master_opts)
    try:
        where = factory.describe(opts)
        cache = factory.existing_data_cache(opts)
        if cache is None:
            raise FleetError(f"no fleet: the master's minion data cache ({where}) does not exist (no minion has "
                             "reported its grains to a master using this cachedir); give --fleet FILE|DIR or set "
                             "fleet_file")
        try:
            grains = cache.all("grains")
        finally:
            cache.close()
    except (OSError, sqlite3.Error, ValueError, StoreError, ConfigError) as exc:
        raise FleetError(f"cannot read the master's minion data cache: {exc}") from None
    if not grains:
        raise FleetError(f"no fleet: the master's minion data cache ({where}) holds no grains yet; give --fleet "
                         "FILE|DIR or set fleet_file")
    return {str(k): dict(v or {}) if isinstance(v, dict) else {} for k, v in grains.items()}


PILLAR_TARGET_TYPES = {"pillar", "pillar_pcre", "pillar_exact"}


def target_needs_pillar(tgt: str, tgt_type: str, nodegroups: dict[str, Any]) -> bool:
    """Whether matching this target needs each minion's compiled pillar (I@/J@ engines)."""
    if tgt_type in PILLAR_TARGET_TYPES:
        return True
    if tgt_type not in ("compound", "nodegroup"):
        return False
    from compiler import match

    words = match.expand_nodegroup(tgt, nodegroups) if tgt_type == "nodegroup" else str(tgt).split()
    expanded: list[str] = []
    for word in words:
        if word.startswith("N@"):
            expanded += match.expand_nodegroup(word[2:], nodegroups)
        else:
            expanded.append(word)
    return any(w[:1] in ("I", "J") and "@" in w[1:3] for w in (word.lstrip("(") for word in expanded))


def matches(minion_id: str, grains: dict[str, Any], tgt: str, tgt_type: str, nodegroups: dict[str, Any],
            pillar: dict[str, Any] | None = None) -> bool:
    """Does the minion match the target (Salt's matchers)?  Raises compiler.match.MatchError when malformed."""
    from compiler import match

    expr: Any = tgt
    if tgt_type == "list":
        expr = [part.strip() for part in str(tgt).split(",") if part.strip()]
    return match.match_one(tgt_type, expr, match.Minion(minion_id, grains, pillar or {}), nodegroups)
