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

from runtime.cli.compile_inputs import (
    compile_config,
    git_problems,
    minion_grains,
    missing_roots,
    prepare_git,
    report_errors,
)
from runtime.cli.options import (
    OUTPUTS,
    UsageError,
    add_log_level,
    add_out,
    add_out_file,
    add_target_flags,
    positive_int,
)
from runtime.cli.parser import Parser
from runtime.config import ConfigError

if TYPE_CHECKING:
    from runtime.modules import OfflineReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compile", help="compile pillar / top / highstate / lowstate for a minion, offline",
        description="Compile what a minion gets from your Salt trees, offline: its pillar, top, highstate or "
                    "lowstate (state.show_lowstate), with every error naming its file:line, before anything "
                    "touches a host.  Nothing runs on this host and nothing is written (docs/compile.md); "
                    "the fleet tools compile, explain and diff many minions (docs/fleet.md).",
        epilog="examples:\n"
               "  saltpan compile -c /etc/salt/minion --minion web01 --grains web01.yaml\n"
               "  saltpan compile --minion web01 --show lowstate --out json\n"
               "  saltpan compile --all --diff HEAD~1\n"
               "exit status: 0 compiled, 1 the pillar or the states have errors (each on stderr with its "
               "file:line), 2 a usage or config error.")
    p.add_argument("--config", "-c", metavar="PATH",
                   help="Salt-style minion config file (default: the shipped example trees)")
    p.add_argument("--minion", "-m", metavar="ID", help="minion id to compile for (default: the config's id)")
    p.add_argument("--grains", metavar="FILE", help="YAML/JSON file of the minion's grains")
    p.add_argument("--fleet", metavar="SOURCE",
                   help="fleet file or directory of grains per minion: the minions of --all, the grains of --minion "
                        "(default: the config's fleet_file)")
    p.add_argument("--show", choices=["pillar", "top", "highstate", "lowstate"], default=None, metavar="VIEW",
                   help="what to print: pillar (the default), top, highstate or lowstate")
    p.add_argument("--saltenv", metavar="ENV", help="compile the states of this environment only")
    p.add_argument("--pillarenv", metavar="ENV", help="compile the pillar of this environment only")
    add_log_level(p)
    output = p.add_argument_group("output")
    add_out(output, OUTPUTS, help="output format (default nested; json with --out-dir)")
    add_out_file(output)
    p.add_argument("--fetch", action="store_true", help="fetch the git remotes (gitfs, git ext_pillar) first")
    p.add_argument("--strict", action="store_true",
                   help="warn (file:line) at each template call that would read the minion's host and got the "
                        "offline answer (docs/compile.md)")
    p.add_argument("--offline", action="store_true",
                   help="with a masterless minion's own config: answer host reads as on a host without the "
                        "thing, as for any other minion (docs/compile.md)")
    fleet = p.add_argument_group("fleet tools (docs/fleet.md)")
    fleet.add_argument("--all", action="store_true", help="compile every minion of the fleet, in parallel")
    fleet.add_argument("--target", metavar="TARGET",
                       help="with --all: only the minions this target matches (a glob unless -G/-C/... says otherwise)")
    add_target_flags(fleet, lambda what: f"--target is {what}")
    fleet.add_argument("--out-dir", metavar="DIR", help="write one file per minion into DIR")
    fleet.add_argument("--jobs", "-j", type=positive_int, metavar="N", help="worker processes (default: one per core)")
    fleet.add_argument("--explain", metavar="KEY", help="where the pillar value KEY (e.g. nginx:port) comes from")
    fleet.add_argument("--diff", metavar="REV", help="compare with the roots at git revision REV")
    fleet.add_argument("--diff-to", metavar="DIR", help="compare with another copy of the roots in DIR")
    fleet.add_argument("--validate", action="store_true", help="check the pillar against pillar_schema")
    fleet.add_argument("--unmask", action="store_true", help="show secret values (pillar_mask_patterns)")
    p.set_defaults(func=run, tgt_type=None)
    if isinstance(p, Parser):   # `compile --all -G role:web`, salt's habit: the target goes with --target
        p.unexpected_hint = ("compile takes no positional words; a fleet target is --target TARGET, with -G, -C, "
                             "... for its kind (saltpan compile --all --target role:web -G)")


def run(args: argparse.Namespace) -> int:
    from runtime import pipeline
    from runtime.cli import fleet, output
    from runtime.log_setup import setup as setup_logging

    setup_logging(args.log_level or "warning", None)
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
        if set(grains) == {"id"}:
            warn_no_grains(opts, minion_id, getattr(args, "fleet", None))
    except (ConfigError, UsageError) as exc:
        print(f"saltpan compile: {exc}", file=sys.stderr)
        return 2
    warn_unknown_envs(opts, args.saltenv, args.pillarenv)
    for missing in missing_roots(opts):
        print(f"warning: {missing}: nothing is read from it", file=sys.stderr)

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
        print(output.render(masker.mask(result.pillar), out, sys.stdout, color=getattr(args, "color", None)))
        report_errors(result.errors)
        if not result.errors:  # errors inside data an ext_pillar returned (git_pillar's own compiles)
            for message in result.pillar.get("_errors") or []:
                print(f"error: {message}", file=sys.stderr)
        report_offline(report, getattr(args, "strict", False))
        return 1 if result.errors or result.pillar.get("_errors") else failed
    from runtime.cli import state_views

    status = state_views.show(opts, minion_id, grains, show, out, masker if masker.active else None, functions,
                              color=getattr(args, "color", None))
    report_offline(report, getattr(args, "strict", False))
    return status or failed


def warn_unknown_envs(opts: Mapping[str, Any], saltenv: str | None, pillarenv: str | None) -> None:
    """--saltenv/--pillarenv naming no environment of the roots compile nothing (Salt too, silently):
    say so, with the closest environment (not when git remotes make the environments)."""
    from runtime.cli.parser import did_you_mean
    from runtime.gitfs import uses_git_pillar, uses_gitfs

    for flag, env, key, dynamic in (("--saltenv", saltenv, "file_roots", uses_gitfs(opts)),
                                    ("--pillarenv", pillarenv, "pillar_roots", uses_git_pillar(opts))):
        known = sorted(opts.get(key) or {})
        if env and not dynamic and env not in known:
            print(f"warning: {flag} {env!r} is not an environment of {key} ({', '.join(known) or 'none'})"
                  f"{did_you_mean(env, known)}: nothing is compiled from it", file=sys.stderr)


def warn_no_grains(opts: Mapping[str, Any], minion_id: str, fleet: str | None) -> None:
    """A minion compiled without any grains (none in the config, no --grains).  Not in the fleet
    there is (the config's fleet_file): an unknown minion, most likely misspelt -- UsageError with
    the fleet's closest id.  Without a fleet: a warning, since templates and targets reading grains
    see none."""
    from runtime.cli.compile_inputs import fleet_ids
    from runtime.cli.parser import did_you_mean

    ids = fleet_ids(opts, fleet)
    if ids:
        raise UsageError(f"minion {minion_id!r} is not in the fleet {ids[0]}{did_you_mean(minion_id, ids[1])} and "
                         "has no grains here (none in the config, no --grains): check the id, or pass "
                         "--grains FILE to compile a minion the fleet does not list")
    print(f"warning: minion {minion_id!r} has no grains here (no fleet file, none in the config, no --grains): "
          "it is compiled with grains['id'] only; pass --grains FILE or --fleet SOURCE", file=sys.stderr)


def report_offline(report: OfflineReport, strict: bool) -> None:
    """--strict: one warning per template call answered offline instead of reading the minion's host."""
    if strict:
        for call in report.calls:
            print(f"warning: {call}", file=sys.stderr)


def masker_for(opts: Mapping[str, Any], out: str, unmask: bool) -> Any:
    """Secrets are masked in human output (nested, txt) unless --unmask; json/yaml print real values."""
    from runtime.cli.masking import Masker

    return Masker.from_opts(opts, unmask or out not in ("nested", "txt"))
