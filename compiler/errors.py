"""One error type for everything the compiler reports.

Every error carries a *kind* (a short machine-readable category that matches
the taxonomy of the conformance corpus), a human message, and where known the
file and line that caused it.  ``salt_message()`` renders the error the way
Salt words it so that tools written against Salt keep classifying it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The error kinds.  They mirror the conformance corpus' taxonomy.
RENDER_ERROR = "render_error"
MISSING_SLS = "missing_sls"
NOT_A_DICT = "not_a_dict"
CONFLICTING_ID = "conflicting_id"
REQUISITE_NOT_FOUND = "requisite_not_found"
REQUISITE_CYCLE = "requisite_cycle"
EXT_PILLAR_ERROR = "ext_pillar_error"
MATCH_ERROR = "match_error"
INCLUDE_CYCLE = "include_cycle"
BAD_STATE_DATA = "bad_state_data"
ACCESS_DENIED = "access_denied"
CONFIG_ERROR = "config_error"


@dataclass
class CompileError(Exception):
    """A compile error with its kind and location.

    ``file`` is the path shown to users (relative to the root it was found in,
    prefixed with the saltenv, e.g. ``base:web/init.sls``) and ``line`` is 1-based.
    """

    kind: str
    message: str
    file: str | None = None
    line: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.location()}: {self.message}" if self.location() else self.message

    def location(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file or ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.file:
            out["file"] = self.file
        if self.line:
            out["line"] = self.line
        return out

    def salt_message(self) -> str:
        """The message as a single string that also names the location."""
        loc = self.location()
        return f"{self.message} ({loc})" if loc else self.message


def describe(errors: list[CompileError]) -> list[str]:
    """Human one-liners, file:line first."""
    return [str(err) for err in errors]
