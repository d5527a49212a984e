"""Whether this run is CI, where tests that need a missing facility fail instead of skipping."""

from __future__ import annotations

import os

OPTIONAL = "optional:"


def strict() -> bool:
    """True under CI (``CI`` set to anything but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
