"""log: write a message to the log at a level (Salt's log.debug ... log.exception); returns True."""

from __future__ import annotations

import logging
from typing import Any

from runtime.modules.registry import pure

log = logging.getLogger("saltpan.modules.log")


@pure
def debug(env: Any, message: Any) -> bool:
    """Log message at DEBUG."""
    log.debug(message)
    return True


@pure
def info(env: Any, message: Any) -> bool:
    """Log message at INFO."""
    log.info(message)
    return True


@pure
def warning(env: Any, message: Any) -> bool:
    """Log message at WARNING."""
    log.warning(message)
    return True


@pure
def error(env: Any, message: Any) -> bool:
    """Log message at ERROR."""
    log.error(message)
    return True


@pure
def critical(env: Any, message: Any) -> bool:
    """Log message at CRITICAL."""
    log.critical(message)
    return True


@pure
def exception(env: Any, message: Any) -> bool:
    """Log message at ERROR (Salt's log.exception, outside an exception handler)."""
    log.error(message)
    return True
