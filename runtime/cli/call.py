"""`saltpan call --local FUN [ARGS] [key=value ...]`: run an execution function on this host."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

from runtime.cli.options import OUTPUTS, add_log_level, add_out, offline_config, parse_fun_args
from runtime.config import ConfigError
from runtime.state_returns import STATE_FUNCTIONS, state_retcode

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("call", help="run an execution function on this host (masterless with --local)")
    p.add_argument("--config", "-c", help="minion config file (default: the shipped example trees)")
    p.add_argument("--local", action="store_true", help="masterless: files and pillar from the local roots")
    add_out(p, (*OUTPUTS, "highstate"), help="outputter (default: highstate for states)")
    add_log_level(p, help="log level (default warning)")
    p.add_argument("fun", help="module.function, e.g. state.apply, test.ping, grains.items")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments and key=value keyword arguments")
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

    def fresh() -> tuple[dict[str, Any], list]:
        result = compiler.compile(minion_id, grains)
        return result.pillar, result.errors

    env.fresh_pillar = fresh
    if need_pillar:
        env.pillar.update(fresh()[0])

    def refresh(**_: Any) -> bool:
        env.pillar.clear()
        env.pillar.update(fresh()[0])
        return True

    env.refresh_pillar = refresh
    return env


def fetch_git_remotes(opts: dict[str, Any]) -> bool:
    """gitfs / git_pillar: fetch every remote first, as Salt's masterless minion does on every call; a remote
    that fails is a warning naming it, and its last good revision is used.  False for a bad configuration."""
    from runtime.gitfs import uses_git_pillar, uses_gitfs

    if not (uses_gitfs(opts) or uses_git_pillar(opts)):
        return True
    from runtime.gitfs.remotes import GitConfigError
    from runtime.gitfs.update import masterless_fetch

    try:
        for warning in masterless_fetch(opts):
            print(f"warning: {warning}", file=sys.stderr)
    except GitConfigError as exc:
        print(f"saltpan call: {exc}", file=sys.stderr)
        return False
    return True


def run(args: argparse.Namespace) -> int:
    from runtime import modules
    from runtime.cli import output
    from runtime.log_setup import setup as setup_logging

    setup_logging(args.log_level or "warning", None)
    try:
        opts = offline_config(args.config, "minion")
    except ConfigError as exc:
        print(f"saltpan call: {exc}", file=sys.stderr)
        return 2
    if not args.local and opts.get("file_client") != "local":
        print("saltpan call: only masterless calls are supported here: pass --local (or set file_client: local); "
              "to reach minions through a master use `saltpan run`", file=sys.stderr)
        return 2
    opts["file_client"] = "local"
    fun = args.fun
    fun_args, fun_kwargs = parse_fun_args(args.args)
    try:
        modules.lookup(fun)
    except modules.FunctionNotFound as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if not fetch_git_remotes(opts):
        return 2
    env = masterless_env(opts, need_pillar=fun.startswith(("pillar.", "saltutil.")))
    try:
        result = modules.call(env, fun, fun_args, fun_kwargs)
    except modules.CommandError as exc:
        print(f"Error running '{fun}': {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - report, don't dump a traceback on users
        logging.getLogger(__name__).debug("call failed", exc_info=True)
        print(f"Error running '{fun}': {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    fmt = args.out or ("highstate" if fun in STATE_FUNCTIONS else "nested")
    if fmt == "json":
        print(json.dumps({"local": result}, indent=4, default=str))
    elif fmt == "highstate" and fun in STATE_FUNCTIONS:
        from runtime.cli.highstate_output import format_state_run

        text, _ok = format_state_run("local", result, color=output.use_color(sys.stdout), opts=opts)
        print(text)
    else:
        print(output.render(result, "nested" if fmt == "highstate" else fmt, sys.stdout, label="local"))
    if fun in STATE_FUNCTIONS:
        return state_retcode(result)
    return 1 if env.retcode else 0  # cmd.* whose command failed, test.retcode N: as salt-call
