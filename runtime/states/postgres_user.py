"""The ``postgres_user`` state module: a PostgreSQL role that can log in (present, absent).

As Salt 3008's (``runtime/states/_postgres.py`` for the connection): attributes given are
compared with the role's and changed with ``ALTER ROLE``; a password is stored hashed
(``encrypted``: ``md5``, Salt's default, or ``scram-sha-256``) and only re-set when it differs
(``refresh_password`` always sets it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.states import _postgres as P

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]

_FLAGS = (("inherit", "INHERIT"), ("createdb", "CREATEDB"), ("createroles", "CREATEROLE"),
          ("superuser", "SUPERUSER"), ("replication", "REPLICATION"), ("login", "LOGIN"))


def unavailable() -> str | None:
    return P.unavailable_reason()


def conn_for(ctx: StateContext, kwargs: dict[str, Any]) -> P.Psql:
    return P.Psql.from_state(ctx.opts, ctx.pillar, kwargs.get("user"), kwargs.get("db_user"),
                             kwargs.get("db_password"), kwargs.get("db_host"), kwargs.get("db_port"),
                             kwargs.get("maintenance_db"))


def role_sql(name: str, verb: str, attrs: dict[str, Any], password: str | None, valid_until: Any,
             groups: list[str]) -> str:
    """CREATE/ALTER ROLE with the attributes given (None: left alone), then GRANTs for groups."""
    parts = [f"{verb} ROLE {P.ident(name)}"]
    flags = [flag if attrs[key] else f"NO{flag}" for key, flag in _FLAGS if attrs.get(key) is not None]
    if password is not None:
        flags.append(f"PASSWORD {P.literal(password)}")
    if valid_until is not None:
        flags.append(f"VALID UNTIL {P.literal(valid_until)}")
    if flags:
        parts.append("WITH " + " ".join(flags))
    sql = " ".join(parts)
    for group in groups:
        sql += f"; GRANT {P.ident(group)} TO {P.ident(name)}"
    return sql


def _groups(groups: Any) -> list[str]:
    if groups is None:
        return []
    return [g.strip() for g in (groups.split(",") if isinstance(groups, str) else groups) if str(g).strip()]


def present(ctx: StateContext, name: str, createdb: Any = None, createroles: Any = None, encrypted: Any = None,
            superuser: Any = None, replication: Any = None, inherit: Any = None, login: Any = None,
            password: Any = None, default_password: Any = None, refresh_password: Any = None,
            valid_until: Any = None, groups: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The role ``name`` exists with these attributes (a user: it may log in unless ``login: False``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": f"User {name} is already present"}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    encrypted = P.DEFAULT_ENCRYPTION if encrypted is None else encrypted
    current = P.role(conn, name)
    mode = "update" if current is not None else "create"
    if mode == "create" and password is None:
        password = default_password
    attrs = {"createdb": createdb, "createroles": createroles, "superuser": superuser, "replication": replication,
             "inherit": inherit, "login": login}
    wanted_groups = _groups(groups)
    try:
        if password is not None:
            if mode == "update" and not refresh_password and P.password_matches(
                    name, str(password), current.get("password") if current else None, encrypted):
                password = None
            else:
                password = P.encrypt_password(name, password, encrypted)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    update: dict[str, Any] = {}
    if current is not None:
        update = {key: value for key, value in attrs.items() if value is not None and current[key] != value}
        if password is not None:
            update["password"] = True
        if valid_until is not None and str(current.get("valid_until") or "") != str(valid_until):
            update["valid_until"] = valid_until
        missing = [g for g in wanted_groups if g not in current["groups"]]
        if missing:
            update["groups"] = missing
        if not update:
            return ret
    if ctx.test:
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, result=None, changes={name: update} if update else {},
                    comment=f"User {name} is set to be {mode}d{why}")
    if mode == "create":
        create_attrs = dict(attrs)
        create_attrs["login"] = True if login is None else login
        create_attrs["inherit"] = True if inherit is None else inherit
        sql = role_sql(name, "CREATE", create_attrs, password, valid_until, wanted_groups)
    else:
        sql = role_sql(name, "ALTER", {k: v for k, v in attrs.items() if k in update}, password,
                       update.get("valid_until"), update.get("groups", []))
    if not conn.execute(sql):
        return dict(ret, result=False, comment=f"Failed to {mode} user {name}: {conn.last_error}")
    return dict(ret, changes={name: update if update else "Present"}, comment=f"The user {name} has been {mode}d")


def absent(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """No role ``name``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        conn = conn_for(ctx, kwargs)
    except P.PostgresError as exc:
        return dict(ret, result=False, comment=str(exc))
    if P.role(conn, name) is None:
        why = f" (the server could not be queried: {conn.last_error})" if conn.last_error else ""
        return dict(ret, comment=f"User {name} is not present, so it cannot be removed{why}")
    if ctx.test:
        return dict(ret, result=None, comment=f"User {name} is set to be removed")
    if not conn.execute(f"DROP ROLE {P.ident(name)}"):
        return dict(ret, result=False, comment=f"User {name} failed to be removed: {conn.last_error}")
    return dict(ret, changes={name: "Absent"}, comment=f"User {name} has been removed")
