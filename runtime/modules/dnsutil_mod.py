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
    update=True increments it (or starts today's) and stores it in the minion's grains file
    (grains.setval); only on a minion or in `saltpan call --local`, never while compiling offline."""
    key = f"dnsserial_{zone}" if zone else "dnsserial"
    stored = str(env.grains.get(key, "") or "")
    present = time.strftime("%Y%m%d01")
    if not update:
        return stored or present
    if env.fresh_pillar is None:
        from runtime.modules import CommandError

        raise CommandError("dnsutil.serial(update=True) writes a grain of the minion: not while compiling offline")
    current = str(int(stored) + 1) if stored and stored >= present else present
    from runtime.modules import grains_mod

    grains_mod.setval(env, key, current, refresh_pillar=False)
    return current
