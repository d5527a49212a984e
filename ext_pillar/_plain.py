"""Values from databases and RPC servers as plain pillar data (what msgpack and JSON carry)."""

from __future__ import annotations

import datetime
import decimal
import xmlrpc.client
from collections.abc import Mapping
from typing import Any


def plain(value: Any) -> Any:
    """A value as plain pillar data: str, int, float, bool, None, list, dict (bytes when not UTF-8)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return float(value)
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, xmlrpc.client.DateTime):
        return value.value
    if isinstance(value, xmlrpc.client.Binary):
        value = value.data
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {_key(k): plain(v) for k, v in value.items()}
    return str(value)


def _key(key: Any) -> Any:
    return key if key is None or isinstance(key, (str, bool, int, float)) else str(plain(key))
