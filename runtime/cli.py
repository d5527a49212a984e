"""The `saltpan` command line. Subcommands import what they need lazily, to start fast."""

from __future__ import annotations

import argparse
import sys

OUTPUTS = ["json", "yaml", "nested", "txt"]


def _compile_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="compile pillar / top / highstate / lowstate for a minion, offline")
    p.add_argument("--config", "-c", help="Salt-style config file (default: the shipped example trees)")
    p.add_argument("--minion", "-m", help="minion id to compile for")
    p.add_argument("--grains", help="YAML/JSON file of grains for the minion")
    p.add_argument("--fleet", help="fleet file or directory: the minions of --all, the grains of --minion")
    p.add_argument("--show", choices=["pillar", "top", "highstate", "lowstate"], default=None,
                   help="what to print (default pillar)")
    p.add_argument("--saltenv", help="restrict states to this environment")
    p.add_argument("--pillarenv", help="compile pillar from this environment only")
    p.add_argument("--out", choices=OUTPUTS, default=None, help="output format (default nested; json for --out-dir)")
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
    kinds = fleet.add_mutually_exclusive_group()
    for tgt_type, flag in {"grain": "-G", "compound": "-C", "pcre": "-E", "list": "-L", "pillar": "-I",
                           "grain_pcre": "-P", "nodegroup": "-N", "ipcidr": "-S"}.items():
        kinds.add_argument(flag, dest="tgt_type", action="store_const", const=tgt_type,
                           help=f"--target is a target of type {tgt_type}")
    fleet.add_argument("--out-dir", help="write one file per minion into this directory")
    fleet.add_argument("--jobs", "-j", type=int, help="worker processes (default: one per core)")
    fleet.add_argument("--explain", metavar="KEY", help="where the pillar value KEY (e.g. nginx:port) comes from")
    fleet.add_argument("--diff", metavar="REV", help="compare with the roots at git revision REV")
    fleet.add_argument("--diff-to", metavar="DIR", help="compare with another copy of the roots in DIR")
    fleet.add_argument("--validate", action="store_true", help="check the pillar against pillar_schema")
    fleet.add_argument("--unmask", action="store_true", help="show secret values (pillar_mask_patterns)")
    p.set_defaults(func=_run_compile, tgt_type=None)


def _run_compile(args: argparse.Namespace) -> int:
    from runtime import compile_cmd

    return compile_cmd.run(args)


def _call_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("call", help="run an execution function on this host (masterless with --local)")
    p.add_argument("--config", "-c", help="minion config file (default: the shipped example trees)")
    p.add_argument("--local", action="store_true", help="masterless: files and pillar from the local roots")
    p.add_argument("--out", choices=OUTPUTS + ["highstate"], help="outputter (default: highstate for states)")
    p.add_argument("-l", "--log-level", dest="log_level", default=None, help="log level (default warning)")
    p.add_argument("fun", help="module.function, e.g. state.apply, test.ping, grains.items")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments and key=value keyword arguments")
    p.set_defaults(func=_run_call)


def _run_call(args: argparse.Namespace) -> int:
    from runtime import call_cmd

    return call_cmd.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="saltpan", description="Salt-compatible pillar/state compiler and runner")
    parser.add_argument("--version", action="version", version="saltpan 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _compile_parser(sub)
    _call_parser(sub)
    from runtime import plane_cmds

    plane_cmds.register(sub, OUTPUTS)
    return parser


def hoist_options(argv: list[str], command: str, with_value: set[str], flags: set[str]) -> list[str]:
    """Move a subcommand's options that follow its positional arguments in front of them.

    Salt's CLIs accept `salt-call state.apply test=True --out json`; argparse's
    REMAINDER would swallow `--out json` as a function argument.
    """
    if command not in argv:
        return argv
    start = argv.index(command) + 1
    head, rest = argv[:start], argv[start:]
    options: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        name = word.split("=", 1)[0]
        if name in with_value and "=" not in word and i + 1 < len(rest):
            options += [word, rest[i + 1]]
            i += 2
            continue
        if name in with_value or word in flags:
            options.append(word)
        else:
            positional.append(word)
        i += 1
    return head + options + positional


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = hoist_options(argv, "call", {"--config", "-c", "--out", "-l", "--log-level"}, {"--local"})
    argv = hoist_options(argv, "run", {"--config", "-c", "--out", "-l", "--log-level", "--timeout", "-t",
                                       "--gather-job-timeout"},
                         {"--async", "--static", "-E", "-L", "-G", "-P", "-I", "-C", "-N", "-S"})
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
