"""alternatives: the Debian alternatives system of this host (show_current). Offline: no such
alternative (False)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.alternatives")


@reads_host(absent=constant(False))
def show_current(env: ModuleEnv, name: str) -> Any:
    """The path the alternative `name` points to (False when there is no such alternative)."""
    try:
        return os.readlink(os.path.join("/etc/alternatives", name))
    except OSError:
        log.error("alternative: %s does not exist", name)
        return False
