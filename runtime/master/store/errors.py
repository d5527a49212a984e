"""Errors of the master's stores, shared by every backend (callers never see a driver's own)."""

from __future__ import annotations


class StoreError(Exception):
    """A store operation that failed for a reason the operator must fix (the message says which)."""

    reason = "store_error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class StoreUnavailable(StoreError):
    """The database cannot be reached now (down, unreachable, timed out): nothing was changed.

    Request handlers answer it with the ``store_unavailable`` error token; what stays served in the
    meantime is in docs/operations.md ("When PostgreSQL is unreachable")."""

    reason = "store_unavailable"


class SchemaError(StoreError):
    """The database's schema is missing, older or newer than this saltpan: run
    ``saltpan master --init-store`` (or upgrade saltpan)."""

    reason = "store_schema"
