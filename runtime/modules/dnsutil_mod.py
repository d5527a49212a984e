"""dnsutil: serial (a zone serial number kept in a grain)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


@pure
def serial(env: ModuleEnv, zone: str = "", update: bool = False) -> str:
    """The zone's serial: the `dnsserial[_zone]` grain, else today's date as YYYYMMDD01.
    update=True (which Salt stores in a grain) is not supported: saltpan does not write grains."""
    key = f"dnsserial_{zone}" if zone else "dnsserial"
    stored = env.grains.get(key, "")
    present = time.strftime("%Y%m%d01")
    if not update:
        return stored or present
    from runtime.modules import CommandError

    raise CommandError("dnsutil.serial(update=True) writes a grain, which saltpan does not support")
