"""The error a driver raises for a failure its users should read as is."""

from __future__ import annotations

from compiler.errors import EXT_PILLAR_ERROR, CompileError


class DriverError(CompileError):
    """A driver failure; the pillar compiler reports ``message`` without a type name."""

    def __init__(self, message: str):
        super().__init__(EXT_PILLAR_ERROR, message)
