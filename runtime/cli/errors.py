"""What a command's failure looks like to its user: one line on stderr and an exit status.

Exit statuses (docs/cli.md), Salt's where Salt has a rule:

* 0 -- done;
* 1 -- it ran and failed: a job or state run failed, a minion did not return (``salt``,
  ``salt-call``: EX_GENERIC), a compile had errors;
* 2 -- what was typed or configured is wrong, or what it needs is not there: an unknown option,
  function, minion or file, a bad value, no master running (argparse's and Salt's 2);
* ``saltpan call --retcode-passthrough``: the function's own retcode (a failed state 2, a state
  run that did not compile 1, a pillar that did not render 5, as salt-call's);
* 70 -- an internal error (Salt's EX_SOFTWARE): a bug, shown with its traceback under ``--debug``;
* 130 -- interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys

EX_OK = 0
EX_FAILED = 1
EX_USAGE = 2
EX_SOFTWARE = 70
EX_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line, value or input file, or a missing prerequisite: exit 2, one line."""


def one_line(message: object) -> str:
    """A message on one line (a multi-line one joined with "; ")."""
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    return "; ".join(lines)


def say(command: str | None, message: object) -> None:
    """Print a user-facing error: ``saltpan COMMAND: message``."""
    prefix = f"saltpan {command}" if command else "saltpan"
    print(f"{prefix}: {one_line(message)}", file=sys.stderr)


def expected(exc: BaseException) -> bool:
    """Whether exc is a failure users cause (a bad input or setup), reported without a traceback."""
    from runtime.config import ConfigError
    from runtime.log_setup import LogFileError

    if isinstance(exc, (UsageError, ConfigError, LogFileError)):
        return True
    client = sys.modules.get("runtime.client")
    return client is not None and isinstance(exc, client.ClientError)


def print_traceback(exc: BaseException) -> None:
    import traceback  # here: only --debug needs it, and it costs every command's start-up

    traceback.print_exception(exc, file=sys.stderr)


def report(command: str | None, exc: BaseException, debug: bool) -> int:
    """Report an exception that reached the entry point; the exit status."""
    if expected(exc):
        if debug:
            print_traceback(exc)
        say(command, exc)
        return EX_USAGE
    if debug:
        print_traceback(exc)
    say(command, f"internal error: {type(exc).__name__}: {one_line(exc)} (this is a bug in saltpan: run the "
                 "command again with --debug and report the traceback)")
    return EX_SOFTWARE
