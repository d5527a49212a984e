"""The ``postgres_database`` state module (present, absent), as Salt 3008's.

Encoding, collation and ctype cannot change once a database exists (a clear failure); owner and
tablespace can (``ALTER DATABASE``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _postgres as P
from runtime.states.postgres_user import conn_for

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]


def unavailable() -> str | None:
    return P.unavailable_reason()


def create_sql(name: str, tablespace: Any, encoding: Any, lc_collate: Any, lc_ctype: Any, owner: Any,
               template: Any) -> str:
    parts = []
    for key, value in (("TABLESPACE", tablespace and P.ident(tablespace)), ("OWNER", owner and P.ident(owner)),
                       ("TEMPLATE", template and P.ident(template)), ("ENCODING", encoding and P.literal(encoding)),
                       ("LC_COLLATE", lc_collate and P.literal(lc_collate)),
                       ("LC_CTYPE", lc_ctype and P.literal(lc_ctype))):
        if value:
            parts.append(f"{key} = {value}")
    return f"CREATE DATABASE {P.ident(name)}" + (" WITH " + " ".join(parts) if parts else "")


def present(ctx: StateContext, name: str, tablespace: Any = None, encoding: Any = None, lc_collate: Any = None,
            lc_ctype: Any = None, owner: Any = None, owner_recurse: Any = False, template: Any = None,
            **kwargs: Any) -> dict[str, Any]:
    """The database ``name`` exists with these parameters."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": f"Database {name} is already present"}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    dbs = P.databases(conn)
    params = dbs.get(name)
    if params is not None:
        fixed = ((encoding, params["Encoding"].lower(), str(encoding or "").lower()),
                 (lc_collate, params["Collate"], lc_collate), (lc_ctype, params["Ctype"], lc_ctype))
        if any(given and have != want for given, have, want in fixed):
            return dict(ret, result=False,
                        comment=f"Database {name} has wrong parameters which couldn't be changed on fly.")
        alter = [f"OWNER TO {P.ident(owner)}"] if owner and params["Owner"] != owner else []
        if tablespace and params["Tablespace"] != tablespace:
            alter.append(f"SET TABLESPACE {P.ident(tablespace)}")
        if not alter:
            return ret
    if ctx.test:
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, result=None, comment=f"Database {name} is set to be created{why}" if params is None
                    else f"Database {name} exists, but parameters need to be changed")
    if params is None:
        if not conn.execute(create_sql(name, tablespace, encoding, lc_collate, lc_ctype, owner, template)):
            return dict(ret, result=False, comment=f"Failed to create database {name}: {conn.last_error}")
        return dict(ret, changes={name: "Present"}, comment=f"The database {name} has been created")
    statements = [f"ALTER DATABASE {P.ident(name)} {clause}" for clause in alter]
    if owner_recurse and owner:
        statements.append(f"REASSIGN OWNED BY {P.ident(params['Owner'])} TO {P.ident(owner)}")
    for sql in statements:
        if not conn.execute(sql, name if sql.startswith("REASSIGN") else None):
            return dict(ret, result=False, comment=f"Failed to change parameters for database {name}: "
                                                   f"{conn.last_error}")
    return dict(ret, changes={name: "Parameters changed"}, comment=f"Parameters for database {name} have been changed")


def absent(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """No database ``name``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if name not in P.databases(conn):
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, comment=f"Database {name} is not present, so it cannot be removed{why}")
    if ctx.test:
        return dict(ret, result=None, comment=f"Database {name} is set to be removed")
    if not conn.execute(f"DROP DATABASE {P.ident(name)}"):
        return dict(ret, result=False, comment=f"Database {name} failed to be removed: {conn.last_error}")
    return dict(ret, changes={name: "Absent"}, comment=f"Database {name} has been removed")
