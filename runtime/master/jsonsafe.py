"""Minion-supplied data made storable as JSON (the job cache and the minion data cache).

Loads arrive as msgpack, whose maps may have byte-string or integer keys and whose values may
be byte strings; JSON allows only string keys.  ``jsonable`` turns keys into text (bytes
decoded as UTF-8 with replacement) and leaves values to ``json.dumps(default=str)``, so a
minion's odd return or grains are stored, never a crash of the handler.
"""

from __future__ import annotations

import json
from typing import Any


def _key(key: Any) -> Any:
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    return key if isinstance(key, (str, int, float, bool)) or key is None else str(key)


def jsonable(data: Any) -> Any:
    """A copy of ``data`` whose map keys JSON accepts (recursive: the decoder bounds the depth to 64)."""
    if isinstance(data, dict):
        return {_key(k): jsonable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [jsonable(v) for v in data]
    return data


def dumps(data: Any) -> str:
    """``data`` as JSON text: keys as :func:`jsonable` makes them, odd values as ``str()``."""
    try:
        # the C encoder alone, for data whose keys JSON takes as they are (nearly always): it turns
        # int, float, bool and None keys into text itself, as it does once jsonable() went through
        return json.dumps(data, default=str)
    except TypeError:   # a key JSON does not take (bytes, a tuple...): rebuilt by jsonable() first
        return json.dumps(jsonable(data), default=str)
