"""The `saltpan` command line: the parser of every command, and the entry point.

Each command's module (``compile``, ``call``, ``plane``: master, minion, swarm, run, key, event,
jobs, minions) registers its parser; shared options are ``runtime.cli.options``'.  Commands
import what they need when they run, to start fast: ``saltpan --version`` imports nothing
beyond this module (no argparse, no package metadata scan; tests/unit/test_cli_startup.py
keeps it so).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy treats it the same)

if TYPE_CHECKING:
    import argparse

VERSION = "0.1.0"   # pyproject.toml's version (tests/unit/test_cli_startup.py checks they agree)


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from runtime.cli import call, compile, fileserver, plane

    parser = argparse.ArgumentParser(prog="saltpan", description="Salt-compatible pillar/state compiler and runner")
    parser.add_argument("--version", action="version", version=f"saltpan {VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    compile.register(sub)
    call.register(sub)
    plane.register(sub)
    fileserver.register(sub)
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
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:   # the whole command line: answered before any parser is built
        print(f"saltpan {VERSION}")
        return 0
    from runtime.cli.options import TARGET_FLAGS

    parser = build_parser()
    argv = hoist_options(argv, "call", {"--config", "-c", "--out", "-l", "--log-level"}, {"--local"})
    argv = hoist_options(argv, "run", {"--config", "-c", "--out", "-l", "--log-level", "--timeout", "-t",
                                       "--gather-job-timeout"}, {"--async", "--static", *TARGET_FLAGS.values()})
    for command in ("fileserver", "git_pillar"):   # `saltpan fileserver update backend=gitfs -c CONF`
        if argv[:1] == [command]:
            argv = hoist_options(argv, command, {"--config", "-c", "--out", "-l", "--log-level", "--timeout", "-t"},
                                 set())
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
