"""`saltpan run TARGET FUN [ARG ...] [key=value ...]`: a function on minions through the master, as `salt`.

Returns are printed as they arrive (highstate for state runs, Salt's ``--state-output`` and
``--state-verbose`` overriding the config); ``--static`` prints them together at the end;
``--batch N|P%`` runs on at most N minions (P% of those answering a ping) at a time
(``runtime.cli.batch``).  Exit status, as ``salt``'s: 1 when a minion returned a non-zero retcode
(a failed state, a failed command) or did not return; with ``--batch``, the highest retcode a
minion returned (1 at least when one did not return); 2 when nothing could be sent.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.cli.options import (
    OUTPUTS,
    UsageError,
    add_config,
    add_log_level,
    add_out,
    add_out_file,
    add_state_output,
    add_target_flags,
    check_state_test,
    non_negative_number,
    parse_fun_args,
    positive_number,
)

if TYPE_CHECKING:
    from runtime.cli.job_output import ReturnPrinter
    from runtime.client import LocalClient

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from runtime.cli.batch import batch_spec

    p = sub.add_parser(
        "run", help="run a function on targeted minions through the master (as salt)",
        description="Run an execution function on the minions a target matches, through the master on this "
                    "host, and print their returns as they arrive.  Options may follow the function's "
                    "arguments (salt's habit); '--' ends the options.",
        epilog="examples:\n"
               "  saltpan run '*' test.ping\n"
               "  saltpan run -G role:web state.apply test=True\n"
               "  saltpan run -b 25% '*' state.apply --state-output=terse\n"
               "exit status (salt's): 0 every minion returned with retcode 0, 1 a minion failed or did not "
               "return (with --batch: the highest retcode), 2 nothing could be sent (a bad target, no master "
               "running).")
    add_config(p, help="the master's config file (default /etc/saltpan/master when it exists): where its "
                       "sockets, keys and client key are")
    add_log_level(p)
    add_target_flags(p)
    p.set_defaults(tgt_type="glob")
    p.add_argument("--timeout", "-t", type=positive_number, default=5.0, metavar="SECONDS",
                   help="seconds to wait for returns before asking the missing minions whether they still run "
                        "the job (default 5)")
    p.add_argument("--gather-job-timeout", dest="gather_job_timeout", type=non_negative_number, default=None,
                   metavar="SECONDS",
                   help="seconds to wait for minions to say whether they still run the job, once --timeout "
                        "has passed (config gather_job_timeout, default 3)")
    p.add_argument("--hide-timeout", dest="hide_timeout", action="store_true",
                   help="do not list the minions that did not return (nor count them as failed, as salt)")
    p.add_argument("--async", dest="run_async", action="store_true",
                   help="publish the job, print its job id and return without waiting")
    p.add_argument("--static", "-s", action="store_true", help="print all returns together at the end")
    batch = p.add_argument_group("batches (as salt -b)")
    batch.add_argument("--batch", "--batch-size", "-b", dest="batch", type=batch_spec, metavar="N|P%",
                       help="run on at most N minions at a time, or P percent of those that answer a ping; "
                            "a finished minion's place goes to the next one")
    batch.add_argument("--batch-wait", dest="batch_wait", type=non_negative_number, default=0.0, metavar="SECONDS",
                       help="with --batch: wait this long after a minion returns before its place is used again")
    batch.add_argument("--failhard", action="store_true",
                       help="with --batch: stop starting minions once one returns a non-zero retcode")
    output = p.add_argument_group("output")
    add_out(output, (*OUTPUTS, "highstate"), help="output format (default highstate for state runs, else nested)")
    add_out_file(output)
    add_state_output(output)
    p.add_argument("tgt", metavar="TARGET", help="the minions: a glob unless a target flag says otherwise")
    p.add_argument("fun", metavar="FUNCTION", help="module.function, e.g. test.ping, state.apply, cmd.run")
    p.add_argument("args", nargs="*", metavar="ARG",
                   help="the function's arguments: values (YAML: 1, true, [a, b]) and key=value keyword arguments")
    p.set_defaults(func=run)


def check_flags(args: argparse.Namespace) -> None:
    """Options that only mean something together."""
    if args.batch and args.run_async:
        raise UsageError("--async cannot run a batch (saltpan's master has no batch manager): drop --async to "
                         "run the batch from here, or --batch to publish to every minion at once")
    if not args.batch:
        for flag, given in (("--batch-wait", bool(args.batch_wait)), ("--failhard", args.failhard)):
            if given:
                raise UsageError(f"{flag} is an option of batches: add --batch N (or P%)")


def run(args: argparse.Namespace) -> int:
    from runtime.cli.job_output import state_overrides
    from runtime.cli.master_access import client_for
    from runtime.cli.options import plane_config

    check_flags(args)
    opts = state_overrides(plane_config(args, "master"), args)
    fun_args, fun_kwargs = parse_fun_args(args.args)
    check_state_test(args.fun, fun_kwargs)
    tgt: Any = args.tgt
    if args.tgt_type == "list" and isinstance(tgt, str):
        tgt = [t.strip() for t in tgt.split(",") if t.strip()]
    client = client_for(opts)
    from runtime.client import ClientError

    try:
        return _dispatch(client, args, opts, tgt, fun_args, fun_kwargs)
    except ClientError as exc:
        if str(exc).endswith("(no_minions)"):
            raise UsageError(f"{exc}{no_minion_hint(opts, tgt, args.tgt_type)}") from None
        raise


def no_minion_hint(opts: Mapping[str, Any], tgt: Any, tgt_type: str | None) -> str:
    """For a target that matched no minion: the accepted minion closest to a misspelt id (a glob
    or list target), else where the accepted minions are listed."""
    from runtime.cli.parser import did_you_mean

    try:
        accepted = os.listdir(os.path.join(str(opts["pki_dir"]), "minions"))
    except OSError:
        return ""
    if not accepted:
        return "; no minion key is accepted yet (saltpan key -L lists the waiting ones, saltpan key -A accepts them)"
    words = tgt if isinstance(tgt, list) else [tgt] if tgt_type in (None, "glob") else []
    for word in words:
        hint = did_you_mean(str(word), accepted)
        if hint:
            return hint
    return f"; {len(accepted)} minions are accepted (saltpan key -L lists them)"


def _dispatch(client: LocalClient, args: argparse.Namespace, opts: dict[str, Any], tgt: Any, fun_args: list[Any],
              fun_kwargs: dict[str, Any]) -> int:
    from runtime.cli.job_output import ReturnPrinter
    from runtime.config import option

    if args.run_async:
        published = client.publish(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, int(args.timeout))
        print(f"Executed command with job ID: {published.jid}")
        return 0
    gather = args.gather_job_timeout if args.gather_job_timeout is not None else \
        option(opts, "gather_job_timeout", float)
    printer = ReturnPrinter(args, opts, args.fun)
    if args.batch:
        from runtime.cli.batch import BatchRun

        outcome = BatchRun(client, printer, args.batch, wait=args.batch_wait, failhard=args.failhard,
                           timeout=float(args.timeout), gather_job_timeout=gather,
                           hide_timeout=args.hide_timeout).run(tgt, args.tgt_type, args.fun, fun_args, fun_kwargs)
        printer.finish(len(outcome.missing))
        return outcome.exit_status()
    return _run_all(client, printer, args, tgt, fun_args, fun_kwargs, gather)


def _run_all(client: LocalClient, printer: ReturnPrinter, args: argparse.Namespace, tgt: Any, fun_args: list[Any],
             fun_kwargs: dict[str, Any], gather: float) -> int:
    from runtime.cli.job_output import retcode_of
    from runtime.client import JobResult

    final: JobResult | None = None
    for item in client.cmd_iter(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, float(args.timeout),
                                gather_job_timeout=gather):
        if isinstance(item, JobResult):
            final = item
            continue
        printer.returned(*item)
    assert final is not None
    missing = [] if args.hide_timeout else final.missing
    for minion_id in missing:
        printer.missing(minion_id)
    printer.finish(len(final.missing))
    # as `salt`: exit 1 when a minion did not return or returned a non-zero retcode
    failed = sorted(m for m, r in final.returns.items() if retcode_of(r) != 0)
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        print(f"ERROR: Minions did not return: {shown} (they may still be running the job; "
              f"to look up the returns later: saltpan jobs lookup {final.jid})", file=sys.stderr)
    if failed:
        print(f"ERROR: Minions returned with non-zero exit code: {', '.join(failed)}", file=sys.stderr)
    return 1 if missing or failed or printer.failed_states else 0
