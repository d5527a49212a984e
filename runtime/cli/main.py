"""The `saltpan` command line: the parser of every command, and the entry point.

Each command's module registers its parser (``COMMANDS``); shared options are
``runtime.cli.options``', the parser class and how words are read ``runtime.cli.parser``'s, and
what a failure looks like ``runtime.cli.errors``'.  Commands import what they need when they run,
to start fast: ``saltpan --version`` imports nothing beyond this module (no argparse, no package
metadata scan; tests/unit/test_cli_startup.py keeps it so).
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy treats it the same)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from types import ModuleType

    from runtime.cli.parser import Parser

VERSION = "0.1.0"   # pyproject.toml's version (tests/unit/test_cli_startup.py checks they agree)
# commands whose words after the function name are the function's arguments (Salt's `FUN ARG key=value`),
# and the runner-like ones taking key=value words (`saltpan fileserver update backend=gitfs -c CONF`)
FUNCTION_COMMANDS = ("call", "run", "fileserver", "git_pillar")


# every command and the module registering it (``runtime.cli.<module>``; a module may register
# several): ``saltpan --help`` lists them in this order, and a command line naming one of them builds
# that module's parsers alone, so ``saltpan run`` never imports the compiler's or the daemons' commands
COMMANDS: dict[str, str] = {
    "compile": "compile", "call": "call", "run": "run",
    "master": "plane", "minion": "plane", "swarm": "plane", "key": "plane", "event": "plane", "jobs": "plane",
    "minions": "plane", "fileserver": "fileserver", "git_pillar": "fileserver", "completion": "completion",
}
# the global options (runtime.cli.parser.add_global_options): none takes a value
_GLOBAL_FLAGS = frozenset({"--debug", "--no-color", "--no-colour", "--force-color", "--force-colour"})


def command_modules(command: str | None = None) -> tuple[ModuleType, ...]:
    """The modules registering the commands, in the order ``saltpan --help`` lists them; only
    ``command``'s when one is given (``completion`` describes every command: all of them)."""
    import importlib

    names = [COMMANDS[command]] if command in COMMANDS and command != "completion" else COMMANDS.values()
    return tuple(importlib.import_module(f"runtime.cli.{name}") for name in dict.fromkeys(names))


def typed_command(words: list[str]) -> str | None:
    """The command a command line names, when only global options come before it (else None:
    ``saltpan -h``, a misspelt command and the like need every command's parser)."""
    for word in words:
        if word in COMMANDS:
            return word
        if word not in _GLOBAL_FLAGS:
            return None
    return None


def build_parser(command: str | None = None) -> Parser:
    """The parser of every command, or of ``command`` alone (what its command line needs)."""
    from runtime.cli.parser import Parser, add_global_options

    parser = Parser(prog="saltpan", description=(
        "Compile and apply Salt pillar and state trees: offline (compile), masterless on this host "
        "(call --local), or on minions through a master (run, key, jobs, event, minions, master, "
        "minion).  'saltpan COMMAND --help' describes a command and every option.  Exit status: 0 "
        "done, 1 failed (a job, state or compile), 2 a usage or setup error (docs/cli.md)."),
        epilog="Environment: NO_COLOR (set: no colours).  Shell completion: 'saltpan completion bash|zsh'.")
    parser.add_argument("--version", "-V", action="version", version=f"saltpan {VERSION}",
                        help="print the version and exit")
    add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", parser_class=Parser)
    for module in command_modules(command):
        module.register(sub)
    for command_parser in sub.choices.values():
        add_global_options(command_parser)
    parser.set_defaults(root_parser=parser)   # the whole parser, for `saltpan completion`
    return parser


def color_wanted(args: argparse.Namespace, stream: object = None) -> bool:
    """Whether to colour: --force-color, else not with --no-color or NO_COLOR (any value but
    empty, no-color.org), else when stdout is a terminal."""
    if getattr(args, "force_color", False):
        return True
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextlib.contextmanager
def output_to(args: argparse.Namespace) -> Iterator[None]:
    """stdout for the command's output: --out-file FILE (Salt's), else stdout; sets ``args.color``."""
    from runtime.cli.errors import UsageError

    path = getattr(args, "out_file", None)
    if getattr(args, "out_file_append", False) and not path:
        raise UsageError("--out-file-append appends to the file of --out-file FILE: give both")
    if not path:
        args.color = color_wanted(args)
        yield
        return
    try:
        stream = open(path, "a" if args.out_file_append else "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UsageError(f"cannot write --out-file {path}: {exc.strerror}") from None
    args.color = color_wanted(args, stream)
    with stream, contextlib.redirect_stdout(stream):
        yield


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:   # the whole command line: answered before any parser is built
        print(f"saltpan {VERSION}")
        return 0
    from runtime.cli.errors import EX_INTERRUPTED, EX_OK, EX_USAGE, report
    from runtime.cli.parser import parse

    parser = build_parser(typed_command(words))
    args = parse(parser, words, FUNCTION_COMMANDS)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EX_USAGE
    try:
        with output_to(args):
            return int(args.func(args) or EX_OK)
    except KeyboardInterrupt:
        return EX_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`saltpan ... | head`): stop quietly, without Python's complaint
        # when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EX_OK
    except Exception as exc:  # noqa: BLE001 - every failure is one line (a traceback only with --debug)
        return report(args.command, exc, bool(getattr(args, "debug", False)))


if __name__ == "__main__":
    sys.exit(main())
