"""The ``postgres_schema`` state module (present, absent in database ``dbname``), as Salt 3008's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _postgres as P
from runtime.states.postgres_user import conn_for

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]


def unavailable() -> str | None:
    return P.unavailable_reason()


def present(ctx: StateContext, name: str, dbname: str, owner: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The schema ``name`` exists in database ``dbname`` (created with ``owner``)."""
    ret: dict[str, Any] = {"dbname": dbname, "name": name, "changes": {}, "result": True,
                           "comment": f"Schema {name} is already present in database {dbname}"}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if P.schema(conn, dbname, name) is not None:
        return dict(ret, comment=f"Schema {name} already exists in database {dbname}")
    if ctx.test:
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, result=None, comment=f"Schema {name} is set to be created in database {dbname}.{why}")
    sql = f"CREATE SCHEMA {P.ident(name)}" + (f" AUTHORIZATION {P.ident(owner)}" if owner else "")
    if not conn.execute(sql, dbname):
        return dict(ret, result=False, comment=f"Failed to create schema {name} in database {dbname}: "
                                               f"{conn.last_error}")
    return dict(ret, changes={name: "Present"}, comment=f"Schema {name} has been created in database {dbname}")


def absent(ctx: StateContext, name: str, dbname: str, **kwargs: Any) -> dict[str, Any]:
    """No schema ``name`` in database ``dbname``."""
    ret: dict[str, Any] = {"name": name, "dbname": dbname, "changes": {}, "result": True, "comment": ""}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if P.schema(conn, dbname, name) is None:
        return dict(ret, comment=f"Schema {name} is not present in database {dbname}, so it cannot be removed")
    if ctx.test:
        return dict(ret, result=None, comment=f"Schema {name} is set to be removed from database {dbname}")
    if not conn.execute(f"DROP SCHEMA {P.ident(name)}", dbname):
        return dict(ret, result=False, comment=f"Schema {name} failed to be removed: {conn.last_error}")
    return dict(ret, changes={name: "Absent"}, comment=f"Schema {name} has been removed from database {dbname}")
