"""`saltpan compile`: pillar, top, highstate or lowstate for one minion, offline."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from runtime import config as config_mod
from runtime.config import ConfigError


class UsageError(Exception):
    """A bad command line or input file, reported without a traceback."""


def read_data_file(path: str, what: str) -> dict[str, Any]:
    data = config_mod.load_data_file(path, what, UsageError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a {what} file must be a mapping, got {type(data).__name__}")
    return data


def load_opts(config_path: str | None, role: str = "minion") -> dict[str, Any]:
    if config_path:
        return config_mod.load(config_path, role)
    return config_mod.shipped(role)


def fleet_grains(opts: Mapping[str, Any], minion_id: str, fleet: str | None = None) -> dict[str, Any]:
    """Grains of minion_id from a fleet source (file or directory), if it has them."""
    from runtime import fleet as fleet_mod

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


def pillar_compiler(opts: Mapping[str, Any]):
    from runtime import pipeline

    return pipeline.pillar_compiler(opts)


def run(args: argparse.Namespace) -> int:
    from runtime import fleet_cmd, output

    if fleet_cmd.wants_fleet(args):
        return fleet_cmd.run(args)
    try:
        opts = load_opts(args.config)
        if args.saltenv:
            opts["saltenv"] = args.saltenv
        if args.pillarenv:
            opts["pillarenv"] = args.pillarenv
        minion_id = args.minion or opts.get("id")
        if not minion_id:
            raise UsageError("compile needs --minion ID (or an `id` in the config file)")
        opts["id"] = minion_id
        grains = minion_grains(opts, minion_id, args.grains, getattr(args, "fleet", None))
    except (ConfigError, UsageError) as exc:
        print(f"saltpan compile: {exc}", file=sys.stderr)
        return 2

    show = args.show or "pillar"
    out = args.out or "nested"
    try:
        masker = masker_for(opts, out, getattr(args, "unmask", False))
    except ValueError as exc:
        print(f"saltpan compile: {exc}", file=sys.stderr)
        return 2
    from runtime import pipeline
    from runtime.modules import OfflineReport

    report = OfflineReport()
    functions = pipeline.offline_functions(opts, report)
    if show == "pillar":
        result = pipeline.pillar_compiler(opts, functions=functions).compile(minion_id, grains)
        print(output.render(masker.mask(result.pillar), out, sys.stdout))
        report_errors(result.errors)
        report_offline(report, getattr(args, "strict", False))
        if result.errors and set(grains) == {"id"}:
            print(f"note: minion {minion_id!r} has no grains here (not in the fleet file, no --grains): templates "
                  "that read grains fail; pass --grains FILE or --fleet SOURCE", file=sys.stderr)
        return 1 if result.errors else 0
    from runtime import state_cmd

    status = state_cmd.show(opts, minion_id, grains, show, out, masker if masker.active else None, functions)
    report_offline(report, getattr(args, "strict", False))
    return status


def report_offline(report: Any, strict: bool) -> None:
    """--strict: one warning per template call answered offline instead of reading the minion's host."""
    if strict:
        for call in report.calls:
            print(f"warning: {call}", file=sys.stderr)


def masker_for(opts: Mapping[str, Any], out: str, unmask: bool):
    """Secrets are masked in human output (nested, txt) unless --unmask; json/yaml print real values."""
    from runtime.masking import Masker

    return Masker.from_opts(opts, unmask or out not in ("nested", "txt"))


def report_errors(errors: list) -> None:
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
