"""The ``postgres_tablespace`` state module (present, absent), as Salt 3008's: a tablespace in
``directory`` (which must exist, owned by the server's user), its ``owner`` and ``options``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _postgres as P
from runtime.states.postgres_user import conn_for

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]


def unavailable() -> str | None:
    return P.unavailable_reason()


def present(ctx: StateContext, name: str, directory: str, options: Any = None, owner: Any = None,
            **kwargs: Any) -> dict[str, Any]:
    """The tablespace ``name`` exists in ``directory`` with this ``owner`` and ``options``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": f"Tablespace {name} is already present"}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    found = P.tablespaces(conn).get(name)
    if found is None:
        if ctx.test:
            why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
            return dict(ret, result=None, comment=f"Tablespace {name} is set to be created{why}")
        sql = (f"CREATE TABLESPACE {P.ident(name)}" + (f" OWNER {P.ident(owner)}" if owner else "")
               + f" LOCATION {P.literal(directory)}")
        if options:
            sql += " WITH (" + ", ".join(f"{k} = {v}" for k, v in dict(options).items()) + ")"
        if not conn.execute(sql):
            return dict(ret, result=False, comment=f"Failed to create tablespace {name}: {conn.last_error}")
        return dict(ret, changes={name: "Present"}, comment=f"The tablespace {name} has been created")
    if found["Location"] != directory:
        return dict(ret, result=False, comment=f"Tablespace {name} is not at the right location. This is "
                                               "unfixable without dropping and recreating the tablespace.")
    changes: dict[str, Any] = {}
    if owner and found["Owner"] != owner:
        if ctx.test:
            return dict(ret, result=None, comment=f"Tablespace {name} owner to be altered")
        if not conn.execute(f"ALTER TABLESPACE {P.ident(name)} OWNER TO {P.ident(owner)}"):
            return dict(ret, result=False, comment=f"Failed to change the owner of tablespace {name}: "
                                                   f"{conn.last_error}")
        changes["owner"] = owner
        ret["comment"] = f"Tablespace {name} owner changed"
    for key, value in dict(options or {}).items():
        if f"{key}={value}" not in (found.get("Opts") or ""):
            if ctx.test:
                return dict(ret, result=None, comment=f"Tablespace {name} options to be altered")
            if not conn.execute(f"ALTER TABLESPACE {P.ident(name)} SET ({key} = {value})"):
                return dict(ret, result=False, comment=f"Failed to set {key} on tablespace {name}: {conn.last_error}")
            changes.setdefault("options", {})[key] = value
            ret["comment"] = f"Tablespace {name} opts changed"
    return dict(ret, changes={name: changes} if changes else {})


def absent(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """No tablespace ``name``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if name not in P.tablespaces(conn):
        return dict(ret, comment=f"Tablespace {name} is not present, so it cannot be removed")
    if ctx.test:
        return dict(ret, result=None, comment=f"Tablespace {name} is set to be removed")
    if not conn.execute(f"DROP TABLESPACE {P.ident(name)}"):
        return dict(ret, result=False, comment=f"Tablespace {name} failed to be removed: {conn.last_error}")
    return dict(ret, changes={name: "Absent"}, comment=f"Tablespace {name} has been removed")
