"""`saltpan call --local FUN [ARGS] [key=value ...]`: run an execution function on this host."""

from __future__ import annotations

import argparse
import json
import logging
import re
import socket
import sys
from typing import Any

from runtime import config as config_mod
from runtime.config import ConfigError

_KWARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
STATE_FUNCS = {"state.apply", "state.highstate", "state.sls", "state.single"}


def yamlify(value: str) -> Any:
    """Salt's CLI argument parsing: numbers, booleans, lists and dicts are YAML; the rest stays text."""
    import yaml

    if not value or value.strip() != value and " " in value:
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    if parsed is None and value.strip().lower() not in ("null", "none", "~"):
        return value
    if isinstance(parsed, int) and not isinstance(parsed, bool) and not -2**63 <= parsed < 2**64:
        return value  # a 20-digit jid: an int this large cannot travel in msgpack, and means the text
    if isinstance(parsed, (int, float, bool, list, dict)) or parsed is None:
        return parsed
    return value


def parse_cli_args(words: list[str]) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for word in words:
        found = _KWARG.match(word)
        if found:
            kwargs[found.group(1)] = yamlify(found.group(2))
        else:
            args.append(yamlify(word))
    return args, kwargs


def masterless_env(opts: dict[str, Any], need_pillar: bool):
    from compiler.roots import LocalRoots
    from runtime import grains as grains_mod
    from runtime import pipeline
    from runtime.modules import ModuleEnv

    minion_id = str(opts.get("id") or socket.getfqdn())
    opts["id"] = minion_id
    from runtime.modules import live_functions

    grains = grains_mod.minion_grains(opts, minion_id)
    env = ModuleEnv(opts=opts, grains=grains, pillar={}, state_source=LocalRoots(opts.get("file_roots") or {}),
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


def state_failed(result: Any) -> bool:
    if isinstance(result, list):
        return True
    if isinstance(result, dict):
        return any(isinstance(r, dict) and r.get("result") is False for r in result.values())
    return False


def run(args: argparse.Namespace) -> int:
    from runtime import modules, output
    from runtime.log_setup import setup as setup_logging

    setup_logging(args.log_level or "warning", None)
    try:
        opts = config_mod.load(args.config, "minion") if args.config else config_mod.shipped("minion")
    except ConfigError as exc:
        print(f"saltpan call: {exc}", file=sys.stderr)
        return 2
    if not args.local and opts.get("file_client") != "local":
        print("saltpan call: only masterless calls are supported here: pass --local (or set file_client: local); "
              "to reach minions through a master use `saltpan run`", file=sys.stderr)
        return 2
    opts["file_client"] = "local"
    fun = args.fun
    fun_args, fun_kwargs = parse_cli_args(args.args)
    try:
        modules.lookup(fun)
    except modules.FunctionNotFound as exc:
        print(f"'{fun}' is not available: {exc}", file=sys.stderr)
        return 1
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
    fmt = args.out or ("highstate" if fun in STATE_FUNCS else "nested")
    if fmt == "json":
        print(json.dumps({"local": result}, indent=4, default=str))
    elif fmt == "highstate" and fun in STATE_FUNCS:
        from runtime.highstate_output import format_state_run

        text, _ok = format_state_run("local", result, color=output.use_color(sys.stdout), opts=opts)
        print(text)
    else:
        print(output.render(result, "nested" if fmt == "highstate" else fmt, sys.stdout, label="local"))
    if fun in STATE_FUNCS:
        if isinstance(result, list):
            return 1
        return 2 if state_failed(result) else 0
    return 1 if env.retcode else 0  # cmd.* whose command failed, test.retcode N: as salt-call
