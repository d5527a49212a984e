"""Outputters: json, yaml, nested (Salt's default human format), txt.

The highstate outputter lives in ``runtime.cli.highstate_output``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

COLORS = {
    "cyan": "\033[0;36m",
    "green": "\033[0;32m",
    "yellow": "\033[0;33m",
    "red": "\033[0;31m",
    "lightred": "\033[1;31m",
    "blue": "\033[0;34m",
    "magenta": "\033[0;35m",
    "reset": "\033[0m",
}


def use_color(stream: TextIO, force: bool | None = None) -> bool:
    """``force`` when given (the command line's choice, ``args.color``), else whether stream is a
    terminal and NO_COLOR is unset (no-color.org)."""
    if force is not None:
        return force
    if os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, color: str, enabled: bool) -> str:
    return f"{COLORS[color]}{text}{COLORS['reset']}" if enabled else text


def to_json(data: Any, indent: int | None = 4) -> str:
    return json.dumps(data, indent=indent, sort_keys=False, default=str, ensure_ascii=False)


def to_yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(_plain(data), default_flow_style=False, sort_keys=False, allow_unicode=True).rstrip("\n")


def _plain(data: Any) -> Any:
    if isinstance(data, dict):
        return {str(k) if not isinstance(k, (str, int, float, bool)) else k: _plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(v) for v in data]
    if isinstance(data, (str, int, float, bool)) or data is None:
        return data
    return str(data)


def nested(data: Any, indent: int = 0, color: bool = False) -> str:
    """Salt's nested outputter."""
    lines: list[str] = []
    _nested(data, indent, "", lines, color)
    return "\n".join(lines)


def _nested(data: Any, indent: int, prefix: str, out: list[str], color: bool) -> None:
    pad = " " * indent
    if isinstance(data, dict):
        if prefix:
            out.append(f"{pad}{prefix}")
        out.append(f"{pad}{paint('----------', 'cyan', color) if color else '----------'}")
        for key, value in data.items():
            out.append(f"{pad}{paint(str(key), 'cyan', color)}:")
            _nested(value, indent + 4, "", out, color)
    elif isinstance(data, (list, tuple)):
        for item in data:
            if isinstance(item, (dict, list, tuple)):
                out.append(f"{pad}|_")
                _nested(item, indent + 2, "", out, color)
            else:
                out.append(f"{pad}- {paint(str(item), 'green', color)}")
    else:
        text = str(data)
        for line in text.splitlines() or [""]:
            out.append(f"{pad}{paint(line, 'green', color)}")


def txt(data: Any) -> str:
    if isinstance(data, dict):
        return "\n".join(f"{k}: {v}" for k, v in data.items())
    return str(data)


def render(data: Any, fmt: str, stream: TextIO = sys.stdout, label: str | None = None,
           color: bool | None = None) -> str:
    """Format data for printing; `label` wraps human formats the way salt-call shows `local:`."""
    if fmt == "json":
        return to_json(data)
    if fmt == "yaml":
        return to_yaml({label: data} if label else data)
    if fmt == "txt":
        return txt(data)
    enabled = use_color(stream, color)
    if label:
        return f"{paint(label, 'cyan', enabled)}:\n" + nested(data, 4, enabled)
    return nested(data, 0, enabled)
