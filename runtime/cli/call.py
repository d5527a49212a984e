"""`saltpan call --local FUN [ARGS] [key=value ...]`: run an execution function on this host."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from typing import TYPE_CHECKING, Any

from runtime.cli.errors import one_line
from runtime.cli.options import (
    OUTPUTS,
    UsageError,
    add_log_level,
    add_out,
    add_out_file,
    add_state_output,
    check_state_test,
    offline_config,
    parse_fun_args,
)
from runtime.cli.parser import did_you_mean
from runtime.state_returns import STATE_FUNCTIONS, state_retcode

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "call", help="run an execution function on this host (masterless with --local, as salt-call)",
        description="Run an execution function on this host, masterless: files and pillar come from the local "
                    "roots of the minion config (salt-call --local).  Options may follow the function's "
                    "arguments (salt-call's habit); '--' ends the options.",
        epilog="examples:\n"
               "  saltpan call --local -c /etc/saltpan/minion state.apply test=True\n"
               "  saltpan call --local grains.items --out json\n"
               "  saltpan call --local sys.list_functions state\n"
               "exit status (salt-call's): 0 done, 1 the function failed (a failed state, a failed command), 2 "
               "a usage or config error; with --retcode-passthrough the function's own retcode (a failed "
               "state 2).")
    p.add_argument("--config", "-c", metavar="PATH",
                   help="the minion config file (default: the shipped example trees)")
    p.add_argument("--local", action="store_true",
                   help="masterless: files and pillar from the local roots (implied by file_client: local)")
    p.add_argument("--retcode-passthrough", dest="retcode_passthrough", action="store_true",
                   help="exit with the function's own retcode (a failed state 2, a state run that did not "
                        "compile 1, a pillar that did not render 5) instead of 1 for any failure, as salt-call")
    add_log_level(p)
    output = p.add_argument_group("output")
    add_out(output, (*OUTPUTS, "highstate"), help="output format (default highstate for state runs, else nested)")
    add_out_file(output)
    add_state_output(output)
    p.add_argument("fun", metavar="FUNCTION", help="module.function, e.g. state.apply, test.ping, grains.items")
    p.add_argument("args", nargs="*", metavar="ARG",
                   help="the function's arguments: values (YAML: 1, true, [a, b]) and key=value keyword arguments")
    p.set_defaults(func=run)


def masterless_env(opts: dict[str, Any], need_pillar: bool) -> ModuleEnv:
    import socket  # here, not at the top: `saltpan run` and `--version` load this module without needing it

    from compiler.roots import LocalRoots
    from runtime import grains as grains_mod
    from runtime import pipeline
    from runtime.modules import ModuleEnv

    minion_id = str(opts.get("id") or socket.getfqdn())
    opts["id"] = minion_id
    from runtime.modules import live_functions

    grains = grains_mod.minion_grains(opts, minion_id)
    env = ModuleEnv(opts=opts, grains=grains, pillar={}, state_source=pipeline.file_source(opts),
                    pillar_source=LocalRoots(opts.get("pillar_roots") or {}))
    # masterless: templates call execution functions for real on this host, as salt-call --local
    compiler = pipeline.pillar_compiler(opts, functions=live_functions(env))

    logged: set[str] = set()

    def fresh() -> tuple[dict[str, Any], list]:
        result = compiler.compile(minion_id, grains)
        # the pillar's _errors say "see master log"; masterless, this console is that log (as Salt's
        # salt-call logs the render error at CRITICAL): each error once, with its file:line and cause
        for error in map(str, result.errors):
            if error not in logged:
                logged.add(error)
                logging.getLogger("runtime.pillar").critical("Pillar render error: %s", error)
        # the state run's return keeps Salt's words (its _errors), as salt-call's: the cause is logged above
        return result.pillar, []

    env.fresh_pillar = fresh
    if need_pillar:
        env.pillar.update(fresh()[0])

    def refresh(**_: Any) -> bool:
        env.pillar.clear()
        env.pillar.update(fresh()[0])
        return True

    env.refresh_pillar = refresh
    return env


def closest_function(name: str, known: list[str]) -> str:
    """`` (did you mean 'mod.fun'?)`` for a misspelt function, or a function name without its module
    (``ping``: ``test.ping``); else ``""``."""
    if "." not in name:
        same = sorted(k for k in known if k.split(".", 1)[1] == name)
        if same:
            return f" (did you mean '{same[0]}'?)"
    return did_you_mean(name, known, cutoff=0.75)


def fetch_git_remotes(opts: dict[str, Any]) -> None:
    """gitfs / git_pillar: fetch every remote first, as Salt's masterless minion does on every call; a remote
    that fails is a warning naming it, and its last good revision is used.  A bad configuration: UsageError."""
    from runtime.gitfs import uses_git_pillar, uses_gitfs

    if not (uses_gitfs(opts) or uses_git_pillar(opts)):
        return
    from runtime.gitfs.remotes import GitConfigError
    from runtime.gitfs.update import masterless_fetch

    try:
        for warning in masterless_fetch(opts):
            print(f"warning: {warning}", file=sys.stderr)
    except GitConfigError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from runtime import modules
    from runtime.cli import output
    from runtime.cli.job_output import state_overrides
    from runtime.log_setup import setup as setup_logging

    setup_logging(args.log_level or "warning", None)
    opts = state_overrides(offline_config(args.config, "minion"), args)
    if not args.local and opts.get("file_client") != "local":
        raise UsageError("only masterless calls are supported here: pass --local (or set file_client: local); "
                         "to reach minions through a master use `saltpan run`")
    opts["file_client"] = "local"
    fun = args.fun
    fun_args, fun_kwargs = parse_fun_args(args.args)
    check_state_test(args.fun, fun_kwargs)
    fetch_git_remotes(opts)
    from runtime.cli.compile_inputs import missing_roots

    for missing in missing_roots(opts):
        logging.getLogger("runtime.roots").warning("%s: nothing is read from it", missing)
    env = masterless_env(opts, need_pillar=fun.startswith(("pillar.", "saltutil.", "config.", "mine.", "match."))
                         or fun == "cp.get_template" or fun not in modules.registry())   # custom: __pillar__
    if not modules.has_function(env, fun):   # saltpan's functions and synced custom modules
        try:
            modules.lookup(fun)
        except modules.FunctionNotFound as exc:
            hint = closest_function(fun, modules.list_functions())
            raise UsageError(f"'{fun}' is not available{hint}; saltpan call --local sys.list_functions lists "
                             "them" if hint else f"{exc}") from None
    try:
        result = modules.call(env, fun, fun_args, fun_kwargs)
    except modules.CommandError as exc:
        message, usage, _ = str(exc).partition("\n\nUsage:")
        print(f"Error running '{fun}': {one_line(message)}" + (f"; usage: saltpan call --local sys.doc {fun}"
                                                                 if usage else ""), file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - report, don't dump a traceback on users
        logging.getLogger(__name__).debug("call failed", exc_info=True)
        if getattr(args, "debug", False):
            traceback.print_exc()
        if isinstance(exc, OSError) and exc.strerror:   # a file or a resource of this host: the user's to fix
            where = f": {exc.filename}" if exc.filename else ""
            print(f"Error running '{fun}': {exc.strerror}{where}", file=sys.stderr)
            return 1
        print(f"Error running '{fun}': {type(exc).__name__}: {one_line(exc)}"
              + ("" if getattr(args, "debug", False) else " (--debug shows where)"), file=sys.stderr)
        return 1
    fmt = args.out or ("highstate" if fun in STATE_FUNCTIONS else "nested")
    color = bool(getattr(args, "color", False))
    if fmt == "json":
        print(json.dumps({"local": result}, indent=4, default=str))
    elif fmt == "highstate" and fun in STATE_FUNCTIONS:
        from runtime.cli.highstate_output import format_state_run

        text, _ok = format_state_run("local", result, color=color, opts=opts)
        print(text)
    else:
        print(output.render(result, "nested" if fmt == "highstate" else fmt, sys.stdout, label="local", color=color))
    # salt-call: the function's retcode with --retcode-passthrough, else 1 for any failure
    retcode = state_retcode(result) if fun in STATE_FUNCTIONS else env.retcode
    if args.retcode_passthrough:
        return retcode
    return 1 if retcode else 0
