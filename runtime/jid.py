"""Job ids like Salt's: YYYYMMDDhhmmssffffff (UTC), strictly increasing within a process."""

from __future__ import annotations

import datetime
import threading

_lock = threading.Lock()
_last = ""


def new_jid() -> str:
    global _last
    with _lock:
        jid = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%d%H%M%S%f")
        if jid <= _last:
            jid = str(int(_last) + 1)
        _last = jid
        return jid


def is_jid(value: object) -> bool:
    return isinstance(value, str) and len(value) == 20 and value.isdigit()
