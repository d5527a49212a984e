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
        opts = config_mod.load(config_path, role)
        if role == "minion":
            from runtime.gitfs import uses_git_pillar, uses_gitfs

            if uses_gitfs(opts) or uses_git_pillar(opts):
                # the git clones are the master's: the cachedir of this config loaded as a master config
                opts["cachedir"] = config_mod.load(config_path, "master")["cachedir"]
        return opts
    return config_mod.shipped(role)


def prepare_git(args: argparse.Namespace) -> int:
    """--fetch: fetch the config's git remotes first (gitfs, git_pillar); 1 when one failed, else 0."""
    if not getattr(args, "fetch", False):
        return 0
    opts = load_opts(args.config)
    from runtime.gitfs import uses_git_pillar, uses_gitfs

    if not (uses_gitfs(opts) or uses_git_pillar(opts)):
        print("saltpan compile: --fetch: the config has no git remotes (gitfs_remotes with gitfs in "
              "fileserver_backend, or an ext_pillar git entry)", file=sys.stderr)
        return 0
    from runtime.gitfs.remotes import GitConfigError
    from runtime.gitfs.update import update

    try:
        results = update(opts)
    except GitConfigError as exc:
        raise UsageError(f"{opts.get('conf_file', 'config')}: {exc}") from None
    failed = 0
    for result in results:
        for note in result.notes:
            print(f"warning: {note}", file=sys.stderr)
        if not result.ok:
            failed = 1
            print(f"error: {result.summary()}", file=sys.stderr)
    return failed


def git_problems(opts: Mapping[str, Any]) -> list[str]:
    """Why a gitfs remote serves nothing (not fetched yet, damaged cache); a bad git config raises UsageError."""
    from runtime.gitfs import uses_gitfs

    if not uses_gitfs(opts):
        return []
    from runtime import pipeline
    from runtime.gitfs.remotes import GitConfigError

    try:
        source = pipeline.file_source(opts)
    except GitConfigError as exc:
        raise UsageError(f"{opts.get('conf_file', 'config')}: {exc}") from None
    problems = getattr(source, "problems", None)
    return problems() if callable(problems) else []


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

    try:
        fetch_failed = prepare_git(args)
    except (ConfigError, UsageError) as exc:
        print(f"saltpan compile: {exc}", file=sys.stderr)
        return 2
    if fleet_cmd.wants_fleet(args):
        return fleet_cmd.run(args) or fetch_failed
    try:
        opts = load_opts(args.config)
        problems = git_problems(opts)
        if args.saltenv:
            opts["saltenv"] = args.saltenv
        if args.pillarenv:
            opts["pillarenv"] = args.pillarenv
        minion_id = args.minion or opts.get("id")
        if not minion_id:
            raise UsageError("compile needs --minion ID (or an `id` in the config file)")
        from runtime import pipeline

        this_host = pipeline.compiles_this_host(opts, minion_id) and not getattr(args, "offline", False)
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
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    failed = 1 if problems or fetch_failed else 0
    from runtime.modules import OfflineReport

    report = OfflineReport()
    functions = pipeline.offline_functions(opts, report, read_host=this_host)
    if show == "pillar":
        result = pipeline.pillar_compiler(opts, functions=functions).compile(minion_id, grains)
        print(output.render(masker.mask(result.pillar), out, sys.stdout))
        report_errors(result.errors)
        if not result.errors:  # errors inside data an ext_pillar returned (git_pillar's own compiles)
            for message in result.pillar.get("_errors") or []:
                print(f"error: {message}", file=sys.stderr)
        report_offline(report, getattr(args, "strict", False))
        if result.errors and set(grains) == {"id"}:
            print(f"note: minion {minion_id!r} has no grains here (not in the fleet file, no --grains): templates "
                  "that read grains fail; pass --grains FILE or --fleet SOURCE", file=sys.stderr)
        return 1 if result.errors or result.pillar.get("_errors") else failed
    from runtime import state_cmd

    status = state_cmd.show(opts, minion_id, grains, show, out, masker if masker.active else None, functions)
    report_offline(report, getattr(args, "strict", False))
    return status or failed


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
