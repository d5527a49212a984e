"""What the commands share on the command line: where the config comes from, the log level, the
outputters, the target flags, and how a function's arguments are written (Salt's CLI rules)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from runtime.cli.errors import UsageError as UsageError  # re-exported: commands raise it from here

OUTPUTS = ("json", "yaml", "nested", "txt")
# target type -> Salt's flag (salt -E/-L/-G/-P/-I/-C/-N/-S); without one a target is a glob
TARGET_FLAGS: Mapping[str, str] = {"pcre": "-E", "list": "-L", "grain": "-G", "grain_pcre": "-P", "pillar": "-I",
                                   "compound": "-C", "nodegroup": "-N", "ipcidr": "-S"}
DEFAULT_CONFIG_DIR = "/etc/saltpan"
_KWARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


# ---------------------------------------------------------------- options

def add_config(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    parser.add_argument("--config", "-c", metavar="PATH", help=help or (
        f"config file, or a directory holding one named after the role (default {DEFAULT_CONFIG_DIR}/"
        "<master|minion> when it exists, else the built-in defaults)"))


def add_log_level(parser: argparse.ArgumentParser, help: str = "log level on stderr (default warning)") -> None:
    from runtime.log_setup import LEVELS

    parser.add_argument("-l", "--log-level", dest="log_level", default=None, choices=list(LEVELS),
                        metavar="LEVEL", help=f"{help}: {', '.join(LEVELS)}")


def add_out(parser: argparse.ArgumentParser | argparse._ArgumentGroup, choices: tuple[str, ...] = OUTPUTS,
            help: str = "output format") -> None:
    parser.add_argument("--out", "--output", dest="out", choices=list(choices), default=None, metavar="OUTPUTTER",
                        help=f"{help}: {', '.join(choices)}")


def add_out_file(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Salt's --out-file/--out-file-append: the output into a file (errors stay on stderr)."""
    parser.add_argument("--out-file", "--output-file", dest="out_file", metavar="FILE",
                        help="write the output to FILE instead of stdout (replacing it; no colours unless "
                             "--force-color)")
    parser.add_argument("--out-file-append", "--output-file-append", dest="out_file_append", action="store_true",
                        help="with --out-file: append to FILE instead of replacing it")


def add_state_output(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Salt's --state-output and --state-verbose: override the config's state_output/state_verbose."""
    from runtime.cli.highstate_output import STATE_OUTPUTS

    parser.add_argument("--state-output", "--state_output", dest="state_output", choices=list(STATE_OUTPUTS),
                        metavar="MODE", help="how the highstate outputter shows each state (config state_output, "
                                             f"default full): {', '.join(STATE_OUTPUTS)}")
    parser.add_argument("--state-verbose", "--state_verbose", dest="state_verbose", type=boolean, metavar="BOOL",
                        help="true: show every state; false: leave out the states that succeeded without "
                             "changes (config state_verbose, default true)")


def boolean(text: str) -> bool:
    """A boolean option value, as Salt's CLI takes them: true/false, yes/no, on/off, 1/0."""
    word = text.strip().lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean: give true or false")


def positive_number(text: str) -> float:
    """A number of seconds (or a count) that must be above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number above 0")
    return value


def non_negative_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number, 0 or more")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


# target type -> (Salt's long flag, what such a target is)
TARGET_KINDS: Mapping[str, tuple[str, str]] = {
    "pcre": ("--pcre", "a regular expression of minion ids"),
    "list": ("--list", "a comma-separated list of minion ids"),
    "grain": ("--grain", "a grain and a glob of its value (os:Debian, roles:web*)"),
    "grain_pcre": ("--grain-pcre", "a grain and a regular expression of its value"),
    "pillar": ("--pillar", "a pillar key and a glob of its value (role:db)"),
    "compound": ("--compound", "a compound target (G@role:web and not web09)"),
    "nodegroup": ("--nodegroup", "a nodegroup of the master's config"),
    "ipcidr": ("--ipcidr", "an IP address or a CIDR subnet (10.0.0.0/24)"),
}


def add_target_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                     help: Callable[[str], str] = lambda what: f"the target is {what}") -> None:
    """Salt's target-type flags, mutually exclusive, each setting ``tgt_type``; ``help`` is given
    what such a target is."""
    group = parser.add_mutually_exclusive_group()
    for tgt_type, flag in TARGET_FLAGS.items():
        long_name, what = TARGET_KINDS[tgt_type]
        group.add_argument(flag, long_name, dest="tgt_type", action="store_const", const=tgt_type, help=help(what))


# ---------------------------------------------------------------- config

def config_path(given: str | None, role: str, default_dir: str = DEFAULT_CONFIG_DIR) -> str | None:
    """The config file for ``role``: ``-c FILE``; ``-c DIR`` reads ``DIR/<role>`` (what Salt's -c
    means); without -c, ``/etc/saltpan/<role>`` when it exists (as Salt reads /etc/salt/master)."""
    if given:
        return os.path.join(given, role) if os.path.isdir(given) else given
    default = os.path.join(default_dir, role)
    return default if os.path.isfile(default) else None


def plane_config(args: argparse.Namespace, role: str) -> dict[str, Any]:
    """The config of a daemon or of a command talking to one (``-c``, else /etc/saltpan), with ``-l``."""
    from runtime import config

    opts = config.load(config_path(args.config, role), role)
    level = getattr(args, "log_level", None)
    if level:
        opts["log_level"] = level
    return opts


def offline_config(given: str | None, role: str = "minion") -> dict[str, Any]:
    """The config of an offline command (``compile``, ``call --local``): ``-c FILE`` (``-c DIR``:
    ``DIR/<role>``, as Salt's ``-c /etc/salt``), else the shipped example trees."""
    from runtime import config

    return config.load(config_path(given, role), role) if given else config.shipped(role)


# ---------------------------------------------------------------- function arguments

def yamlify(value: str) -> Any:
    """Salt's CLI argument parsing: numbers, booleans, lists and dicts are YAML (read by Salt's YAML
    loader: a leading 0 does not make an octal number); the rest stays text."""
    import yaml

    if not value or value.strip() != value and " " in value:
        return value
    from compiler.yamlload import SaltYamlLoader

    try:
        parsed = yaml.load(value, Loader=SaltYamlLoader)   # Salt's loader: 0644 is 644, as salt-call reads it
    except yaml.YAMLError:
        return value
    if parsed is None and value.strip().lower() not in ("null", "none", "~"):
        return value
    if isinstance(parsed, int) and not isinstance(parsed, bool) and not -2**63 <= parsed < 2**64:
        return value  # a 20-digit jid: an int this large cannot travel in msgpack, and means the text
    if parsed == "" and value in ("|", "!"):
        return value  # YAML reads these as empty text; Salt keeps them
    if isinstance(parsed, dict) and not value.startswith("{"):
        return value  # Salt: a mapping must be written in braces (`a: b` stays text)
    if isinstance(parsed, list) and not value.startswith("["):
        return value
    if isinstance(parsed, (int, float, bool, list, dict, str)) or parsed is None:
        return parsed  # a quoted string loses its quotes, as in salt-call ("'0644'" is the text 0644)
    return value


def parse_fun_args(words: list[str]) -> tuple[list[Any], dict[str, Any]]:
    """``ARG key=value ...`` after a function name: positional arguments and keyword arguments."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for word in words:
        found = _KWARG.match(word)
        if found:
            kwargs[found.group(1)] = yamlify(found.group(2))
        else:
            args.append(yamlify(word))
    return args, kwargs


def check_state_test(fun: str, kwargs: Mapping[str, Any]) -> None:
    """A state run's ``test=`` must be a boolean: ``test=Tru`` is refused before anything is applied
    or sent (UsageError)."""
    from runtime.state_returns import STATE_FUNCTIONS, dry_run_flag

    if fun in STATE_FUNCTIONS and "test" in kwargs:
        try:
            dry_run_flag(kwargs["test"])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
