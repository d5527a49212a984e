"""log: write a message to the log at a level (Salt's log.debug ... log.exception); returns True."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.log")


@pure
def debug(env: ModuleEnv, message: Any) -> bool:
    """Log message at DEBUG."""
    log.debug(message)
    return True


@pure
def info(env: ModuleEnv, message: Any) -> bool:
    """Log message at INFO."""
    log.info(message)
    return True


@pure
def warning(env: ModuleEnv, message: Any) -> bool:
    """Log message at WARNING."""
    log.warning(message)
    return True


@pure
def error(env: ModuleEnv, message: Any) -> bool:
    """Log message at ERROR."""
    log.error(message)
    return True


@pure
def critical(env: ModuleEnv, message: Any) -> bool:
    """Log message at CRITICAL."""
    log.critical(message)
    return True


@pure
def exception(env: ModuleEnv, message: Any) -> bool:
    """Log message at ERROR (Salt's log.exception, outside an exception handler)."""
    log.error(message)
    return True
