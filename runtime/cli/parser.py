"""The argument parser every saltpan command is built with, and how its words are read.

* errors are one line: what was wrong, what to do, with a "did you mean" for a misspelt option,
  command or choice (argparse prints its usage block first; Salt's optparse does too, and both
  hide the one line that matters);
* options that follow a function's arguments are options, as Salt's CLIs read them
  (``saltpan call state.apply test=True --out json``); a word starting with ``-`` is always an
  option there, an unknown one an error (never a job argument); ``--`` ends the options;
* the options every command takes: ``--debug``, ``--no-color``, ``--force-color``.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_UNRECOGNIZED = "unrecognized arguments: "
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def did_you_mean(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` when a candidate is close to ``word``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=cutoff)
    return f" (did you mean '{close[0]}'?)" if close else ""


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped line by line: a line break in the text stays, and an
    indented line is kept as it is (an examples list keeps one example a line)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line if line.startswith(" ") else super(HelpFormatter, self)._fill_text(
            line, width, indent) for line in text.splitlines())


class Parser(argparse.ArgumentParser):
    """argparse with saltpan's one-line errors (subcommand parsers are of this class too)."""

    # what to say after "unexpected argument 'x'" (a command taking no positional words)
    unexpected_hint = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def option_strings(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings]

    def takes_value(self, word: str) -> bool:
        """Whether the option ``word`` (as typed, without ``=value``) takes the next word as its value."""
        action = self._option_string_actions.get(word)
        return action is not None and action.nargs != 0

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {self.explain(message)}; see '{self.prog} --help'\n")

    def explain(self, message: str) -> str:
        if message.startswith(_UNRECOGNIZED):
            words = message[len(_UNRECOGNIZED):].split()
            unknown = next((w for w in words if w.startswith("-")), words[0] if words else "")
            if unknown.startswith("-"):
                name = unknown.split("=", 1)[0]
                return f"no such option: {name}{did_you_mean(name, self.option_strings())}"
            return (f"unexpected argument {unknown!r}" + (f" (and {len(words) - 1} more)" if len(words) > 1 else "")
                    + (f": {self.unexpected_hint}" if self.unexpected_hint else ""))
        found = _INVALID_CHOICE.search(message)
        if found:
            choices = [c.strip().strip("'") for c in found.group(2).split(",")]
            hint = did_you_mean(found.group(1), choices)
            return f"{message[:found.start()]}invalid choice '{found.group(1)}'{hint}: choose from {found.group(2)}"
        return message


def add_global_options(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """--debug, --no-color, --force-color: before the command or after it (``saltpan --no-color run``
    and ``saltpan run --no-color`` mean the same); only the top parser sets their defaults."""
    default = None if top else argparse.SUPPRESS
    group = parser.add_argument_group("output and diagnostics")
    colors = group.add_mutually_exclusive_group()
    colors.add_argument("--no-color", "--no-colour", dest="no_color", action="store_true",
                        default=False if top else argparse.SUPPRESS,
                        help="never colour the output (also when the NO_COLOR environment variable is set)")
    colors.add_argument("--force-color", "--force-colour", dest="force_color", action="store_true",
                        default=False if top else argparse.SUPPRESS,
                        help="colour the output even when it is not a terminal")
    group.add_argument("--debug", action="store_true", default=False if top else default,
                       help="on an unexpected error, print the Python traceback (for a bug report)")


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, Parser]:
    """Each command's parser by name (aliases included)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def find_command(argv: Sequence[str], parser: argparse.ArgumentParser) -> int | None:
    """The index of the command word in argv (after the global options), or None."""
    commands = command_parsers(parser)
    for index, word in enumerate(argv):
        if word in commands:
            return index
        if not word.startswith("-"):
            return None
    return None


def intermix(words: Sequence[str], parser: Parser) -> list[str]:
    """A command's words with its options first and its positional words after them (``--``
    before them when one starts with ``-``), as Salt reads ``FUN ARG --out json key=value``.

    A word starting with ``-`` is an option unless it is a negative number or follows ``--``; an
    option that takes a value takes the next word.  Unknown options stay options: the parser
    reports them.
    """
    options: list[str] = []
    positional: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            positional.extend(words[index:])
            break
        if word.startswith("-") and len(word) > 1 and not _NEGATIVE_NUMBER.match(word):
            options.append(word)
            if "=" not in word and parser.takes_value(word) and index < len(words):
                options.append(words[index])
                index += 1
            continue
        positional.append(word)
    if any(w.startswith("-") for w in positional):
        return [*options, "--", *positional]
    return [*options, *positional]


def parse(parser: Parser, argv: Sequence[str], intermixed: Iterable[str]) -> argparse.Namespace:
    """Parse argv; the commands named in ``intermixed`` (those taking a function and its
    arguments) read their words as ``intermix`` says.  Errors exit 2 with one line."""
    argv = list(argv)
    at = find_command(argv, parser)
    commands = command_parsers(parser)
    if at is not None and argv[at] in intermixed:
        argv = argv[:at + 1] + intermix(argv[at + 1:], commands[argv[at]])
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = getattr(args, "command", None)
        (commands[command] if command in commands else parser).error(_UNRECOGNIZED + " ".join(extra))
    return args

