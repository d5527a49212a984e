"""`saltpan compile --show top|highstate|lowstate`."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


def show(opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any], what: str, out: str) -> int:
    print(f"saltpan compile: --show {what} needs the state compiler, which is not built yet "
          "(only --show pillar works in this version)", file=sys.stderr)
    return 2
