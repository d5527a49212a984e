"""The fleet side of `saltpan compile`: --all, --explain, --diff/--diff-to, --validate.

See docs/fleet.md.  Exit status: 0 ok, 1 a minion failed to compile (or a
schema violation, or the explained key is absent), 2 a usage error; with
--diff/--diff-to as diff's: 0 same, 1 different, 2 trouble.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from runtime.cli.compile_inputs import compile_config, minion_grains, report_errors
from runtime.cli.options import UsageError
from runtime.config import ConfigError


def wants_fleet(args: argparse.Namespace) -> bool:
    """Whether this compile needs the fleet tools rather than the plain one-minion compile."""
    return bool(getattr(args, "all", False) or getattr(args, "explain", None) or getattr(args, "diff", None)
                or getattr(args, "diff_to", None) or getattr(args, "validate", False)
                or getattr(args, "out_dir", None) or getattr(args, "target", None))


def _say(message: str) -> None:
    print(f"saltpan compile: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    diffing = bool(args.diff or args.diff_to)
    try:
        check_flags(args)
        opts = compile_config(args.config)
        if args.saltenv:
            opts["saltenv"] = args.saltenv
        if args.pillarenv:
            opts["pillarenv"] = args.pillarenv
        if args.explain:
            return explain(args, opts)
        minions, fleet, pillar_target = select(args, opts)
        if diffing:
            return diff(args, opts, minions, fleet, pillar_target)
        return compile_all(args, opts, minions, fleet, pillar_target)
    except (ConfigError, UsageError) as exc:
        _say(str(exc))
        return 2


def check_flags(args: argparse.Namespace) -> None:
    if args.all and args.minion:
        raise UsageError("give either --all or --minion ID, not both")
    if args.explain and args.all:
        raise UsageError("--explain KEY explains one minion's value: give --minion ID instead of --all")
    if args.diff and args.diff_to:
        raise UsageError("give either --diff REV or --diff-to DIR, not both")
    if args.target and not args.all:
        raise UsageError("--target selects minions of the fleet: use it with --all")
    if args.explain and (args.diff or args.diff_to or args.validate or args.out_dir):
        raise UsageError("--explain cannot be combined with --diff, --diff-to, --validate or --out-dir")
    if (args.diff or args.diff_to) and args.out_dir:
        raise UsageError("--out-dir writes compiled output; it cannot be combined with --diff/--diff-to")
    if (args.diff or args.diff_to) and args.show not in (None, "pillar", "lowstate"):
        raise UsageError("--diff compares pillar and lowstate: --show may only be pillar (pillar only) or "
                         "lowstate (both, the default)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")


def load_fleet(args: argparse.Namespace, opts: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], str]:
    """The fleet's grains and a name for where they came from: --fleet, else fleet_file, else the master's cache."""
    from runtime.cli import fleet_source as fleet_mod

    try:
        if args.fleet:
            if not os.path.exists(args.fleet):
                raise UsageError(f"fleet source {args.fleet} does not exist")
            return fleet_mod.load_fleet(args.fleet), args.fleet
        if opts.get("fleet_file") and os.path.exists(opts["fleet_file"]):
            return fleet_mod.load_fleet(opts["fleet_file"]), opts["fleet_file"]
        master_opts = compile_config(args.config, "master")
        return fleet_mod.load_cache_fleet(master_opts), "the master's minion data cache"
    except fleet_mod.FleetError as exc:
        raise UsageError(str(exc)) from None


def select(args: argparse.Namespace, opts: Mapping[str, Any]
           ) -> tuple[list[str], dict[str, dict[str, Any]], tuple[str, str] | None]:
    """(minion ids, {id: grains}, the target when it must be matched against each compiled pillar)."""
    from compiler.match import MatchError
    from runtime.cli import fleet_source as fleet_mod

    if not args.all:
        minion_id = args.minion or opts.get("id")
        if not minion_id:
            raise UsageError("give --all (every minion of the fleet) or --minion ID")
        grains = minion_grains(opts, minion_id, args.grains, args.fleet)
        return [minion_id], {minion_id: grains}, None
    if args.grains:
        raise UsageError("--grains gives one minion's grains; with --all the grains come from the fleet")
    fleet, origin = load_fleet(args, opts)
    minions = sorted(fleet)
    if not minions:
        raise UsageError(f"the fleet ({origin}) has no minions")
    if not args.target:
        return minions, fleet, None
    tgt, tgt_type = args.target, args.tgt_type or "glob"
    nodegroups = opts.get("nodegroups") or {}
    try:
        if fleet_mod.target_needs_pillar(tgt, tgt_type, nodegroups):
            return minions, fleet, (tgt, tgt_type)
        selected = [m for m in minions if fleet_mod.matches(m, {**fleet[m], "id": m}, tgt, tgt_type, nodegroups)]
    except MatchError as exc:
        raise UsageError(f"--target {tgt!r}: {exc.message}") from None
    if not selected:
        raise UsageError(f"--target {tgt!r} ({tgt_type}) matches none of the {len(minions)} minions of "
                         f"the fleet ({origin})")
    return selected, fleet, None


def _jobs(args: argparse.Namespace, count: int) -> int:
    from runtime.cli.fleet_compile import default_jobs

    return min(args.jobs or default_jobs(), max(1, count))


def _report_errors(outcomes: list) -> None:
    for outcome in outcomes:
        for error in outcome.errors:
            print(f"{outcome.minion}: {error}", file=sys.stderr)


# -- compile --all / --validate --------------------------------------------------------

def compile_all(args: argparse.Namespace, opts: dict[str, Any], minions: list[str],
                fleet: dict[str, dict[str, Any]], pillar_target: tuple[str, str] | None) -> int:
    from runtime.cli import output
    from runtime.cli.fleet_compile import (
        FleetRequest,
        MinionCompiler,
        Progress,
        run_all,
        unsafe_file_name,
    )
    from runtime.cli.schema import SchemaError, SchemaSet

    fmt = args.out or ("json" if args.out_dir else "nested")
    schemas = None
    if args.validate:
        try:
            schemas = SchemaSet.from_opts(opts)
        except SchemaError as exc:
            raise UsageError(str(exc)) from None
        if schemas is None:
            raise UsageError("--validate needs pillar_schema in the config (a JSON Schema file for the pillar, "
                             "or {top-level key: file}); see docs/fleet.md")
    if args.out_dir:
        for minion_id in minions:
            problem = unsafe_file_name(minion_id)
            if problem:
                raise UsageError(problem)
        if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
            raise UsageError(f"--out-dir {args.out_dir} is a file: give a directory (it is created if missing)")
        try:
            os.makedirs(args.out_dir, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create --out-dir {args.out_dir}: {exc.strerror}") from None
    printing = not args.out_dir and not args.validate
    request = FleetRequest(
        show=args.show or "pillar",
        out=fmt if (args.out_dir or (printing and fmt != "json")) else None,
        label=printing and args.all,
        keep_data=printing and fmt == "json",
        validate=args.validate,
        unmask=args.unmask,
        target=pillar_target,
        out_dir=args.out_dir,
        check_states=True,
    )
    try:
        runner = MinionCompiler(opts, fleet, request, schemas)
    except ValueError as exc:  # a malformed pillar_mask_patterns
        raise UsageError(str(exc)) from None
    jobs = _jobs(args, len(minions))
    progress = Progress(len(minions)) if args.all else None
    started = time.monotonic()

    try:
        outcomes = run_all(runner, minions, jobs, progress)
    finally:
        if progress is not None:
            progress.close()
    elapsed = time.monotonic() - started
    outcomes = [o for o in outcomes if o.matched]
    if pillar_target and not outcomes:
        raise UsageError(f"--target {pillar_target[0]!r} ({pillar_target[1]}) matches none of the "
                         f"{len(minions)} minions of the fleet")
    if printing:
        if fmt == "json":
            data = {o.minion: o.data for o in outcomes if o.data is not None}
            print(output.to_json(data if args.all else next(iter(data.values()), {})))
        else:
            for outcome in outcomes:
                if outcome.text is not None:
                    print(outcome.text)
    failed = [o for o in outcomes if o.failed]
    _report_errors(outcomes)
    violations = sum(len(o.violations) for o in outcomes)
    if args.validate:
        print_violations(outcomes, fmt)
    if args.all:
        where = f", wrote {len(outcomes) - len(failed)} files to {args.out_dir}" if args.out_dir else ""
        checked = f", {violations} schema violations" if args.validate else ""
        print(f"compiled {len(outcomes)} minions in {elapsed:.1f}s with {jobs} processes: "
              f"{len(outcomes) - len(failed)} ok, {len(failed)} failed{checked}{where}", file=sys.stderr)
    return 1 if failed or violations else 0


def print_violations(outcomes: list, fmt: str) -> None:
    from runtime.cli import output

    if fmt in ("json", "yaml"):
        data = {"violations": {o.minion: [v.to_dict() for v in o.violations] for o in outcomes if o.violations},
                "checked": sum(1 for o in outcomes if not o.failed),
                "failed_to_compile": sorted(o.minion for o in outcomes if o.failed)}
        print(output.render(data, fmt, sys.stdout))
        return
    count = 0
    for outcome in outcomes:
        for violation in outcome.violations:
            print(f"{outcome.minion}: {violation}")
            count += 1
    minions = sum(1 for o in outcomes if o.violations)
    checked = sum(1 for o in outcomes if not o.failed)
    print(f"{count} schema violations on {minions} of {checked} minions checked." if count
          else f"pillar_schema: all {checked} minions checked are valid.")


# -- --explain -------------------------------------------------------------------------

def explain(args: argparse.Namespace, opts: dict[str, Any]) -> int:
    from runtime import pipeline
    from runtime.cli import explain as explain_mod
    from runtime.cli import output
    from runtime.cli.masking import Masker

    minion_id = args.minion or opts.get("id")
    if not minion_id:
        raise UsageError("--explain needs --minion ID")
    try:
        key = explain_mod.parse_key(args.explain)
        masker = Masker.from_opts(opts, args.unmask)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    opts["id"] = minion_id
    grains = minion_grains(opts, minion_id, args.grains, args.fleet)
    result = pipeline.pillar_compiler(opts).compile(minion_id, grains, track=True)
    expl = explain_mod.explain(result, minion_id, key)
    if args.out in ("json", "yaml"):
        print(output.render(explain_mod.to_data(expl, masker), args.out, sys.stdout, color=getattr(args, "color", None)))
    else:
        print(explain_mod.to_text(expl, masker))
    report_errors(result.errors)
    return 0 if expl.found else 1


# -- --diff / --diff-to -------------------------------------------------------------------

def diff(args: argparse.Namespace, opts: dict[str, Any], minions: list[str], fleet: dict[str, dict[str, Any]],
         pillar_target: tuple[str, str] | None) -> int:
    import contextlib

    from runtime.cli import fleet_diff, output
    from runtime.cli.fleet_compile import Progress, run_all

    compare_states = (args.show or "lowstate") != "pillar"
    try:
        with contextlib.ExitStack() as stack:
            if args.diff:
                old_opts, new_opts = stack.enter_context(fleet_diff.revisions(opts, args.diff))
            else:
                old_opts, new_opts = opts, fleet_diff.copy_roots(opts, args.diff_to)
            try:
                runner = fleet_diff.DiffRunner(old_opts, new_opts, fleet, compare_states, args.unmask,
                                               pillar_target)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            progress = Progress(len(minions)) if args.all else None
            try:
                outcomes = run_all(runner, minions, _jobs(args, len(minions)), progress)
            finally:
                if progress is not None:
                    progress.close()
    except fleet_diff.DiffError as exc:
        _say(str(exc))
        return 2
    outcomes = [o for o in outcomes if o.matched]
    compared = len(outcomes)
    if args.out in ("json", "yaml"):
        print(output.render(fleet_diff.to_data(outcomes, compared), args.out, sys.stdout,
                            color=getattr(args, "color", None)))
    else:
        print(fleet_diff.to_text(outcomes, compared))
    _report_errors(outcomes)
    if any(o.failed for o in outcomes):
        return 2
    return 1 if any(o.diff is not None and not o.diff.same for o in outcomes) else 0
