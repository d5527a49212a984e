"""environ: this process's environment variables (get, has_value, items). Offline: none set."""

from __future__ import annotations

import logging
import os
from typing import Any

from runtime.modules.registry import reads_host

log = logging.getLogger("saltpan.modules.environ")


def _absent_get(env: Any, key: Any, default: Any = "") -> Any:
    return False if not isinstance(key, str) else default


def _absent_has(env: Any, key: Any, value: Any = None) -> bool:
    return False


def _absent_items(env: Any) -> dict:
    return {}


@reads_host(absent=_absent_get)
def get(env: Any, key: Any, default: Any = "") -> Any:
    """The value of an environment variable (default when unset; False when key is not a string)."""
    if not isinstance(key, str):
        log.debug("environ.get: 'key' argument is not a string type: '%s'", key)
        return False
    return os.environ.get(key, default)


@reads_host(absent=_absent_has)
def has_value(env: Any, key: Any, value: Any = None) -> bool:
    """True when the variable is set (to value, when given)."""
    if not isinstance(key, str) or key not in os.environ:
        return False
    return True if value is None else os.environ[key] == value


@reads_host(absent=_absent_items)
def items(env: Any) -> dict[str, str]:
    """Every environment variable."""
    return dict(os.environ)
