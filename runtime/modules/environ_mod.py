"""environ: this process's environment variables (get, has_value, items). Offline: none set."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.environ")


def _absent_get(env: ModuleEnv, key: Any, default: Any = "") -> Any:
    """the default (the variable is not set)."""
    return False if not isinstance(key, str) else default


def _absent_has(env: ModuleEnv, key: Any, value: Any = None) -> bool:
    """returns False."""
    return False


def _absent_items(env: ModuleEnv) -> dict:
    """returns {}."""
    return {}


@reads_host(absent=_absent_get)
def get(env: ModuleEnv, key: Any, default: Any = "") -> Any:
    """The value of an environment variable (default when unset; False when key is not a string)."""
    if not isinstance(key, str):
        log.debug("environ.get: 'key' argument is not a string type: '%s'", key)
        return False
    return os.environ.get(key, default)


@reads_host(absent=_absent_has)
def has_value(env: ModuleEnv, key: Any, value: Any = None) -> bool:
    """True when the variable is set (to value, when given)."""
    if not isinstance(key, str) or key not in os.environ:
        return False
    return True if value is None else os.environ[key] == value


@reads_host(absent=_absent_items)
def items(env: ModuleEnv) -> dict[str, str]:
    """Every environment variable."""
    return dict(os.environ)
