"""What an offline compile reads besides the trees: its config (with the master's git clones), the
git remotes (``--fetch``), a minion's grains (from a fleet source, the config and grains files), and
how its errors are reported."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from runtime import config as config_mod
from runtime.cli.options import UsageError, config_path, offline_config


def compile_config(given: str | None, role: str = "minion") -> dict[str, Any]:
    """The config of an offline compile (``offline_config``); a minion config using gitfs or
    git_pillar reads the git clones from the master's cachedir (the same file loaded as a master
    config), where ``--fetch`` and the master put them."""
    opts = offline_config(given, role)
    if given and role == "minion":
        from runtime.gitfs import uses_git_pillar, uses_gitfs

        if uses_gitfs(opts) or uses_git_pillar(opts):
            opts["cachedir"] = config_mod.load(config_path(given, role), "master")["cachedir"]
    return opts


def prepare_git(config: str | None, fetch: bool) -> int:
    """--fetch: fetch the config's git remotes first (gitfs, git_pillar); 1 when one failed, else 0."""
    if not fetch:
        return 0
    opts = compile_config(config)
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
        raise UsageError(f"{opts.get('conf_file') or 'config'}: {exc}") from None
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
        raise UsageError(f"{opts.get('conf_file') or 'config'}: {exc}") from None
    problems = getattr(source, "problems", None)
    return problems() if callable(problems) else []


def missing_roots(opts: Mapping[str, Any]) -> list[str]:
    """The configured file_roots and pillar_roots directories that do not exist (a misspelt path:
    Salt skips them silently, and a state run then finds no top file).  A key left at its default
    (/srv/salt, /srv/pillar) is not reported: not every setup has a pillar or reads file_roots."""
    backend = opts.get("fileserver_backend") or ["roots"]
    names = backend.split(",") if isinstance(backend, str) else backend if isinstance(backend, list) else []
    keys = ["pillar_roots"] + (["file_roots"] if "roots" in [str(n).strip() for n in names] else [])
    out: list[str] = []
    for key in keys:
        roots = opts.get(key)
        if not isinstance(roots, Mapping) or roots == config_mod.OPTIONS[key].default:
            continue
        for saltenv, dirs in roots.items():
            for directory in dirs if isinstance(dirs, list) else []:
                if isinstance(directory, str) and not os.path.isdir(directory):
                    why = "is not a directory" if os.path.exists(directory) else "does not exist"
                    out.append(f"{key} {saltenv}: {directory} {why} (config {opts.get('conf_file') or 'defaults'})")
    return out


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
            from runtime.cli.parser import did_you_mean

            raise UsageError(f"minion {minion_id!r} is not in the fleet {source}{did_you_mean(minion_id, minions)} "
                             f"(it has {len(minions)} minions, e.g. {', '.join(sorted(minions)[:3])})")
        return {}
    return dict(minions[minion_id] or {})


def fleet_ids(opts: Mapping[str, Any], fleet: str | None = None) -> tuple[str, list[str]] | None:
    """(the fleet source, its minion ids) of --fleet or the config's fleet_file, None without one."""
    from runtime.cli import fleet_source as fleet_mod

    source = fleet or opts.get("fleet_file")
    if not source or not os.path.exists(source):
        return None
    try:
        return source, sorted(fleet_mod.load_fleet(source))
    except fleet_mod.FleetError:
        return None


def minion_grains(opts: Mapping[str, Any], minion_id: str, grains_file: str | None,
                  fleet: str | None = None) -> dict[str, Any]:
    """The grains a compile uses: the fleet's, the config's ``grains``, its ``grains_file`` (which must
    exist when configured), then --grains FILE; ``id`` always the minion id."""
    from runtime.grains import GrainsError, read_grains_file

    grains: dict[str, Any] = {}
    grains.update(fleet_grains(opts, minion_id, fleet))
    grains.update(opts.get("grains") or {})
    try:
        if opts.get("grains_file"):
            if not os.path.exists(str(opts["grains_file"])):
                raise UsageError(f"grains_file {opts['grains_file']} (config {opts.get('conf_file') or 'option'}) "
                                 "does not exist: create it, remove grains_file from the config, or give the "
                                 "grains with --grains FILE")
            grains.update(read_grains_file(str(opts["grains_file"])))
        if grains_file:
            grains.update(read_grains_file(grains_file))
    except GrainsError as exc:
        raise UsageError(str(exc)) from None
    grains["id"] = minion_id
    return grains


def report_errors(errors: Iterable[object]) -> None:
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
