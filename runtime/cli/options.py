"""What the commands share on the command line: where the config comes from, the log level, the
outputters, the target flags, and how a function's arguments are written (Salt's CLI rules)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

OUTPUTS = ("json", "yaml", "nested", "txt")
# target type -> Salt's flag (salt -E/-L/-G/-P/-I/-C/-N/-S); without one a target is a glob
TARGET_FLAGS: Mapping[str, str] = {"pcre": "-E", "list": "-L", "grain": "-G", "grain_pcre": "-P", "pillar": "-I",
                                   "compound": "-C", "nodegroup": "-N", "ipcidr": "-S"}
DEFAULT_CONFIG_DIR = "/etc/saltpan"
_KWARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


class UsageError(Exception):
    """A bad command line or input file, reported without a traceback."""


# ---------------------------------------------------------------- options

def add_config(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    parser.add_argument("--config", "-c", help=help or (
        f"config file, or a directory holding one named after the role (default {DEFAULT_CONFIG_DIR}/"
        "<master|minion> when it exists)"))


def add_log_level(parser: argparse.ArgumentParser, help: str = "log level") -> None:
    parser.add_argument("-l", "--log-level", dest="log_level", default=None, help=help)


def add_out(parser: argparse.ArgumentParser | argparse._ArgumentGroup, choices: tuple[str, ...] = OUTPUTS,
            help: str = "outputter") -> None:
    parser.add_argument("--out", choices=list(choices), default=None, help=help)


def add_target_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                     help: Callable[[str], str] = lambda tgt_type: f"{tgt_type} target") -> None:
    """Salt's target-type flags, mutually exclusive, each setting ``tgt_type``."""
    group = parser.add_mutually_exclusive_group()
    for tgt_type, flag in TARGET_FLAGS.items():
        group.add_argument(flag, dest="tgt_type", action="store_const", const=tgt_type, help=help(tgt_type))


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
    """The config of an offline command (``compile``, ``call --local``): ``-c FILE``, else the
    shipped example trees."""
    from runtime import config

    return config.load(given, role) if given else config.shipped(role)


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
