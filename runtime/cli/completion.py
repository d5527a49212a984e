"""`saltpan completion bash|zsh`: a shell completion script generated from the parser.

The script is made by shtab (a small, maintained library that turns an argparse parser into a
static bash/zsh completion script): every command, option and choice (``--show``, ``--out``,
``--state-output``, ...) comes from the same parser ``saltpan --help`` prints, and completing
runs no Python.  shtab is imported here only, so no other command pays for it.
"""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh")
# options whose value is a path: completed as files (directories for DIR)
_FILE_METAVARS = frozenset({"PATH", "FILE", "SOURCE"})
_DIR_METAVARS = frozenset({"DIR"})

INSTALL = {
    "bash": "saltpan completion bash > ~/.local/share/bash-completion/completions/saltpan "
            "(or: eval \"$(saltpan completion bash)\" in ~/.bashrc)",
    "zsh": "saltpan completion zsh > \"${fpath[1]}/_saltpan\" (a directory of your $fpath), then restart zsh",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)",
                       description="Print the completion script of saltpan for a shell: its commands, options "
                                   "and option values complete with TAB.",
                       epilog=f"install:\n  bash: {INSTALL['bash']}\n  zsh: {INSTALL['zsh']}")
    p.add_argument("shell", choices=list(SHELLS), metavar="SHELL", help="bash or zsh")
    p.set_defaults(func=run)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` (saltpan's whole parser) for ``shell``."""
    import shtab

    _mark_paths(parser, shtab)
    return shtab.complete(parser, shell=shell)


def _mark_paths(parser: argparse.ArgumentParser, shtab: object) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _mark_paths(child, shtab)
        elif action.metavar in _FILE_METAVARS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif action.metavar in _DIR_METAVARS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.root_parser, args.shell))
    return 0
