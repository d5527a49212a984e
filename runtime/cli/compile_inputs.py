"""What an offline compile reads besides the trees: a minion's grains (from a fleet source, the
config and grains files), and how its errors are reported."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from runtime import config as config_mod
from runtime.cli.options import UsageError


def read_data_file(path: str, what: str) -> dict[str, Any]:
    data = config_mod.load_data_file(path, what, UsageError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a {what} file must be a mapping, got {type(data).__name__}")
    return data


def fleet_grains(opts: Mapping[str, Any], minion_id: str, fleet: str | None = None) -> dict[str, Any]:
    """Grains of minion_id from a fleet source (file or directory), if it has them."""
    from runtime.cli import fleet_source as fleet_mod

    source = fleet or opts.get("fleet_file")
    if fleet and not os.path.exists(fleet):
        raise UsageError(f"fleet source {fleet} does not exist")
    if not source or not os.path.exists(source):
        return {}
    try:
        minions = fleet_mod.load_fleet(source)
    except fleet_mod.FleetError as exc:
        raise UsageError(str(exc)) from None
    if minion_id not in minions:
        if fleet:
            raise UsageError(f"minion {minion_id!r} is not in the fleet {source} "
                             f"(it has {len(minions)} minions, e.g. {', '.join(sorted(minions)[:3])})")
        return {}
    return dict(minions[minion_id] or {})


def minion_grains(opts: Mapping[str, Any], minion_id: str, grains_file: str | None,
                  fleet: str | None = None) -> dict[str, Any]:
    grains: dict[str, Any] = {}
    grains.update(fleet_grains(opts, minion_id, fleet))
    grains.update(opts.get("grains") or {})
    if opts.get("grains_file") and os.path.exists(opts["grains_file"]):
        grains.update(read_data_file(opts["grains_file"], "grains"))
    if grains_file:
        grains.update(read_data_file(grains_file, "grains"))
    grains["id"] = minion_id
    return grains


def report_errors(errors: Iterable[object]) -> None:
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
