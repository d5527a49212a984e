"""Log a refusal once per reason per interval, with a count of what was suppressed.

Floods (auth storms, malformed frames) must not flood the log: each distinct key is
logged at most once per ``interval`` seconds.  That holds for unexpected failures too
(:meth:`RateLimitedLog.exception`): a request that trips a bug must not let its sender write a
traceback into the master's log for every copy it sends.
"""

from __future__ import annotations

import logging
import time
from typing import Any


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, interval: float = 60.0, max_keys: int = 4096):
        self.logger = logger
        self.interval = interval
        self.max_keys = max_keys
        self._last: dict[str, tuple[float, int]] = {}

    def _should_log(self, key: str) -> tuple[bool, int]:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval:
            self._last[key] = (last[0], last[1] + 1)
            return False, 0
        if len(self._last) >= self.max_keys:
            self._last.clear()
        self._last[key] = (now, 0)
        return True, last[1] if last else 0

    def _log(self, level: int, key: str, msg: str, *args: Any, exc_info: bool = False) -> None:
        ok, suppressed = self._should_log(key)
        if not ok:
            return
        if suppressed:
            msg = f"{msg} ({suppressed} similar suppressed)"
        self.logger.log(level, msg, *args, exc_info=exc_info)

    def exception(self, key: str, msg: str, *args: Any) -> None:
        """An error with the traceback of the exception being handled, once per ``key`` and interval."""
        self._log(logging.ERROR, key, msg, *args, exc_info=True)

    def error(self, key: str, msg: str, *args: Any) -> None:
        self._log(logging.ERROR, key, msg, *args)

    def warning(self, key: str, msg: str, *args: Any) -> None:
        self._log(logging.WARNING, key, msg, *args)

    def info(self, key: str, msg: str, *args: Any) -> None:
        self._log(logging.INFO, key, msg, *args)
