"""`saltpan compile`: pillar, top, highstate or lowstate for one minion, offline.

With the fleet flags (--all, --target, --explain, --diff/--diff-to, --validate, --out-dir) the
work is ``runtime.cli.fleet``'s; the state views are ``runtime.cli.state_views``'.  ``--fetch``
fetches the git remotes first; templates get the offline ``salt`` table (``--strict`` names each
host read it answered; a masterless minion's own config reads this host unless ``--offline``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.cli.compile_inputs import compile_config, git_problems, minion_grains, prepare_git, report_errors
from runtime.cli.options import OUTPUTS, UsageError, add_out, add_target_flags
from runtime.config import ConfigError

if TYPE_CHECKING:
    from runtime.modules import OfflineReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="compile pillar / top / highstate / lowstate for a minion, offline")
    p.add_argument("--config", "-c", help="Salt-style config file (default: the shipped example trees)")
    p.add_argument("--minion", "-m", help="minion id to compile for")
    p.add_argument("--grains", help="YAML/JSON file of grains for the minion")
    p.add_argument("--fleet", help="fleet file or directory: the minions of --all, the grains of --minion")
    p.add_argument("--show", choices=["pillar", "top", "highstate", "lowstate"], default=None,
                   help="what to print (default pillar)")
    p.add_argument("--saltenv", help="restrict states to this environment")
    p.add_argument("--pillarenv", help="compile pillar from this environment only")
    add_out(p, OUTPUTS, help="output format (default nested; json for --out-dir)")
    p.add_argument("--fetch", action="store_true", help="fetch the git remotes (gitfs, git ext_pillar) first")
    p.add_argument("--strict", action="store_true",
                   help="warn (file:line) at each template call that would read the minion's host and got the "
                        "offline answer (docs/compile.md)")
    p.add_argument("--offline", action="store_true",
                   help="with a masterless minion's own config: answer host reads as on a host without the "
                        "thing, as for any other minion (docs/compile.md)")
    fleet = p.add_argument_group("fleet tools (docs/fleet.md)")
    fleet.add_argument("--all", action="store_true", help="compile every minion of the fleet, in parallel")
    fleet.add_argument("--target", help="with --all: only the minions this target matches (glob unless -G/-C/...)")
    add_target_flags(fleet, lambda tgt_type: f"--target is a target of type {tgt_type}")
    fleet.add_argument("--out-dir", help="write one file per minion into this directory")
    fleet.add_argument("--jobs", "-j", type=int, help="worker processes (default: one per core)")
    fleet.add_argument("--explain", metavar="KEY", help="where the pillar value KEY (e.g. nginx:port) comes from")
    fleet.add_argument("--diff", metavar="REV", help="compare with the roots at git revision REV")
    fleet.add_argument("--diff-to", metavar="DIR", help="compare with another copy of the roots in DIR")
    fleet.add_argument("--validate", action="store_true", help="check the pillar against pillar_schema")
    fleet.add_argument("--unmask", action="store_true", help="show secret values (pillar_mask_patterns)")
    p.set_defaults(func=run, tgt_type=None)


def run(args: argparse.Namespace) -> int:
    from runtime import pipeline
    from runtime.cli import fleet, output

    try:
        fetch_failed = prepare_git(args.config, bool(getattr(args, "fetch", False)))
    except (ConfigError, UsageError) as exc:
        print(f"saltpan compile: {exc}", file=sys.stderr)
        return 2
    if fleet.wants_fleet(args):
        return fleet.run(args) or fetch_failed
    try:
        opts = compile_config(args.config)
        problems = git_problems(opts)
        if args.saltenv:
            opts["saltenv"] = args.saltenv
        if args.pillarenv:
            opts["pillarenv"] = args.pillarenv
        minion_id = args.minion or opts.get("id")
        if not minion_id:
            raise UsageError("compile needs --minion ID (or an `id` in the config file)")
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
    from runtime.cli import state_views

    status = state_views.show(opts, minion_id, grains, show, out, masker if masker.active else None, functions)
    report_offline(report, getattr(args, "strict", False))
    return status or failed


def report_offline(report: OfflineReport, strict: bool) -> None:
    """--strict: one warning per template call answered offline instead of reading the minion's host."""
    if strict:
        for call in report.calls:
            print(f"warning: {call}", file=sys.stderr)


def masker_for(opts: Mapping[str, Any], out: str, unmask: bool) -> Any:
    """Secrets are masked in human output (nested, txt) unless --unmask; json/yaml print real values."""
    from runtime.cli.masking import Masker

    return Masker.from_opts(opts, unmask or out not in ("nested", "txt"))
