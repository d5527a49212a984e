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
    p.add_argument("--fleet", help="fleet file or directory supplying the minion's grains")
    p.add_argument("--show", choices=["pillar", "top", "highstate", "lowstate"], default="pillar")
    p.add_argument("--saltenv", help="restrict states to this environment")
    p.add_argument("--pillarenv", help="compile pillar from this environment only")
    p.add_argument("--out", choices=OUTPUTS, default="nested")
    p.set_defaults(func=_run_compile)


def _run_compile(args: argparse.Namespace) -> int:
    from runtime import compile_cmd

    return compile_cmd.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="saltpan", description="Salt-compatible pillar/state compiler and runner")
    parser.add_argument("--version", action="version", version="saltpan 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _compile_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
