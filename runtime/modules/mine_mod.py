"""mine: data other minions published (get).  saltpan has no mine: get answers {} everywhere, as
Salt does for a target no minion of the mine matches."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.mine")


@reads_host(absent=constant({}))
def get(env: ModuleEnv, tgt: Any, fun: Any, tgt_type: str = "glob", exclude_minion: bool = False) -> dict[str, Any]:
    """{minion id: data} of fun from the minions matching tgt (always {}: saltpan keeps no mine)."""
    log.debug("mine.get(%r, %r): saltpan keeps no mine data", tgt, fun)
    return {}
