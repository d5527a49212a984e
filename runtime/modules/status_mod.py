"""status: time (the clock of the machine that renders)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


@pure(name="time")
def time_(env: ModuleEnv, format: str = "%A, %d. %B %Y %I:%M%p") -> str:  # noqa: A002 - Salt's argument name
    """The current local time, formatted with strftime."""
    return datetime.datetime.today().strftime(format)
