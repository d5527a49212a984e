"""The ``postgres_extension`` state module (present, absent), as Salt 3008's: installed into
``maintenance_db``, moved to ``schema`` when relocatable, upgraded to ``ext_version``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _postgres as P
from runtime.states.postgres_user import conn_for

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]


def unavailable() -> str | None:
    return P.unavailable_reason()


def _older(installed: str, wanted: str) -> bool:
    def key(version: str) -> list[Any]:
        return [(0, int(p)) if p.isdigit() else (1, p) for p in version.replace("-", ".").split(".")]
    return key(installed) < key(wanted)


def present(ctx: StateContext, name: str, if_not_exists: Any = None, schema: Any = None, ext_version: Any = None,
            from_version: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The extension ``name`` is installed (in ``schema``, at ``ext_version``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": f"Extension {name} is already present"}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    installed = P.extension(conn, name)
    statements: list[str] = []
    if installed is None:
        mode = "install"
        sql = f"CREATE EXTENSION {'IF NOT EXISTS ' if if_not_exists else ''}{P.ident(name)}"
        if schema:
            sql += f" WITH SCHEMA {P.ident(schema)}"
        if ext_version:
            sql += f" VERSION {P.literal(ext_version)}"
        if from_version:
            sql += f" FROM {P.literal(from_version)}"
        statements.append(sql)
    else:
        mode = "upgrade"
        if ext_version and _older(installed["extversion"], str(ext_version)):
            statements.append(f"ALTER EXTENSION {P.ident(name)} UPDATE TO {P.literal(ext_version)}")
        if schema and installed["extrelocatable"] == "t" and installed["schema_name"] != schema:
            statements.append(f"ALTER EXTENSION {P.ident(name)} SET SCHEMA {P.ident(schema)}")
        if not statements:
            return ret
    if ctx.test:
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, result=None, comment=f"Extension {name} is set to be {mode}ed{why}".replace("eed", "ed"))
    for sql in statements:
        if not conn.execute(sql):
            return dict(ret, result=False, comment=f"Failed to {mode} extension {name}: {conn.last_error}")
    done = "Installed" if mode == "install" else "Upgraded"
    return dict(ret, changes={name: done}, comment=f"The extension {name} has been {done.lower()}")


def absent(ctx: StateContext, name: str, if_exists: Any = None, restrict: Any = None, cascade: Any = None,
           **kwargs: Any) -> dict[str, Any]:
    """The extension ``name`` is not installed."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if P.extension(conn, name) is None:
        return dict(ret, comment=f"Extension {name} is not present, so it cannot be removed")
    if ctx.test:
        return dict(ret, result=None, comment=f"Extension {name} is set to be removed")
    sql = (f"DROP EXTENSION {'IF EXISTS ' if if_exists else ''}{P.ident(name)}"
           + (" CASCADE" if cascade else " RESTRICT" if restrict else ""))
    if not conn.execute(sql):
        return dict(ret, result=False, comment=f"Extension {name} failed to be removed: {conn.last_error}")
    return dict(ret, changes={name: "Absent"}, comment=f"Extension {name} has been removed")
