"""Turn text a driver fetched (command output, HTTP body) into pillar data, with clear errors."""

from __future__ import annotations

import json
from typing import Any

from compiler import yamlload
from compiler.errors import CompileError
from ext_pillar._errors import DriverError

_JSON_TYPES = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


def json_mapping(text: str, what: str) -> dict[str, Any]:
    """The JSON object in ``text`` ({} for ``null``); ``what`` names the source in errors."""
    if not text.strip():
        raise DriverError(f"{what} is empty (a JSON object was expected)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DriverError(f"{what} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DriverError(f"{what} is a JSON {_JSON_TYPES.get(type(data), 'value')}, not an object")
    return data


def yaml_mapping(text: str, what: str) -> dict[str, Any]:
    """The YAML mapping in ``text`` ({} for an empty document), loaded as Salt loads sls files."""
    try:
        data, _ = yamlload.load(text, what)
    except CompileError as exc:
        where = f" at line {exc.line}" if exc.line else ""
        raise DriverError(f"{what} is not YAML{where}: {exc.message.removeprefix('YAML syntax error: ')}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DriverError(f"{what} is a YAML {type(data).__name__}, not a mapping")
    return data
