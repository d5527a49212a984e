"""PostgreSQL through ``psql``, as Salt's ``postgres`` execution module reaches it.

Connection arguments come from the state (``user`` = the OS user psql runs as, ``db_user``,
``db_password``, ``db_host``, ``db_port``, ``maintenance_db``), else from the config options
``postgres.user``, ``postgres.pass``, ``postgres.host``, ``postgres.port``,
``postgres.maintenance_db`` (minion config, then pillar), as in Salt. Without a host, psql runs
as the OS user ``postgres`` over the local socket. A query that cannot reach the server answers
as if nothing existed (Salt's behaviour); the error is kept in ``Psql.last_error`` for comments.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime import cmdrun

DEFAULT_ENCRYPTION = "md5"  # Salt 3008's _DEFAULT_PASSWORDS_ENCRYPTION


class PostgresError(Exception):
    pass


def psql_binary(opts: Mapping[str, Any]) -> str | None:
    bins = opts.get("postgres.bins_dir")
    if bins:
        path = os.path.join(str(bins), "psql")
        return path if os.access(path, os.X_OK) else None
    return shutil.which("psql")


def unavailable_reason(opts: Mapping[str, Any] | None = None) -> str | None:
    if psql_binary(opts or {}) is None:
        return "Unable to load postgres module.  Make sure `postgres.bins_dir` is set."
    return None


def ident(name: Any) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def literal(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def md5_password(role: str, password: str) -> str:
    return "md5" + hashlib.md5(f"{password}{role}".encode()).hexdigest()  # noqa: S324 - PostgreSQL's format


def scram_sha_256(password: str, salt_bytes: bytes | None = None, iterations: int = 4096) -> str:
    salt_bytes = salt_bytes if salt_bytes is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt_bytes, iterations)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    server = hmac.new(salted, b"Server Key", "sha256").digest()
    return (f"SCRAM-SHA-256${iterations}:{base64.b64encode(salt_bytes).decode()}$"
            f"{base64.b64encode(stored).decode()}:{base64.b64encode(server).decode()}")


def encrypt_password(role: str, password: Any, encrypted: Any) -> str:
    password = str(password)
    if encrypted is True:
        encrypted = "md5"
    if encrypted not in (False, "md5", "scram-sha-256"):
        raise PostgresError(f"Unknown password algorithm: {encrypted}")
    if encrypted == "scram-sha-256" and not password.startswith("SCRAM-SHA-256"):
        return scram_sha_256(password)
    if encrypted == "md5" and not password.startswith("md5"):
        return md5_password(role, password)
    return password


def password_matches(role: str, password: str, verifier: str | None, encrypted: Any) -> bool:
    """Whether the stored ``verifier`` is ``password`` (Salt's _verify_password)."""
    if not verifier:
        return False
    if encrypted in ("md5", True):
        return verifier == (password if password.startswith("md5") else md5_password(role, password))
    if encrypted == "scram-sha-256":
        if password.startswith("SCRAM-SHA-256"):
            return verifier == password
        match = re.match(r"^SCRAM-SHA-256\$(\d+):([^\$]+?)\$", verifier)
        return match is not None and verifier == scram_sha_256(password, base64.b64decode(match.group(2)),
                                                               int(match.group(1)))
    return verifier == password


def _option(opts: Mapping[str, Any], pillar: Mapping[str, Any], key: str) -> Any:
    if opts.get(key) is not None:
        return opts[key]
    return pillar.get(key)


@dataclass
class Psql:
    """One connection setting; ``query`` and ``execute`` run psql once each."""

    binary: str
    runas: str | None = None
    host: str | None = None
    port: Any = None
    user: str | None = None
    password: str | None = None
    maintenance_db: str = "postgres"
    last_error: str = field(default="")

    @classmethod
    def from_state(cls, opts: Mapping[str, Any], pillar: Mapping[str, Any], user: str | None = None,
                   db_user: str | None = None, db_password: str | None = None, db_host: str | None = None,
                   db_port: Any = None, maintenance_db: str | None = None) -> Psql:
        binary = psql_binary(opts)
        if binary is None:
            raise PostgresError(unavailable_reason(opts) or "psql not found")
        host = db_host or _option(opts, pillar, "postgres.host")
        runas = user
        if runas is None and (not host or str(host).startswith("/")):
            runas = "postgres"
        return cls(binary, runas, host, db_port or _option(opts, pillar, "postgres.port"),
                   db_user or _option(opts, pillar, "postgres.user") or runas,
                   db_password if db_password is not None else _option(opts, pillar, "postgres.pass"),
                   maintenance_db or _option(opts, pillar, "postgres.maintenance_db") or "postgres")

    def command(self, sql: str, db: str | None = None) -> list[str]:
        cmd = [self.binary, "--no-align", "--no-readline", "--no-psqlrc", "--no-password", "-v", "ON_ERROR_STOP=1"]
        if self.user:
            cmd += ["--username", self.user]
        if self.host:
            cmd += ["--host", str(self.host)]
        if self.port:
            cmd += ["--port", str(self.port)]
        return cmd + ["--dbname", db or self.maintenance_db, "-c", sql]

    def _run(self, sql: str, db: str | None) -> cmdrun.CommandResult:
        env: dict[str, str] = {"LC_ALL": "C.UTF-8"}
        passfile = None
        if self.password is not None:
            fd, passfile = tempfile.mkstemp(prefix="saltpan-pgpass-")
            with os.fdopen(fd, "w") as handle:
                host = "localhost" if not self.host or str(self.host).startswith("/") else self.host
                handle.write(f"{host}:{self.port or '*'}:*:{self.user or '*'}:{self.password}\n")
            if self.runas and os.geteuid() == 0:
                import pwd

                try:
                    os.chown(passfile, pwd.getpwnam(self.runas).pw_uid, -1)
                except KeyError:
                    pass
            env["PGPASSFILE"] = passfile
        try:
            return cmdrun.run(self.command(sql, db), runas=self.runas if self._switch_user() else None, env=env,
                              timeout=60)
        finally:
            if passfile:
                os.unlink(passfile)

    def _switch_user(self) -> bool:
        if not self.runas:
            return False
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name != self.runas

    def execute(self, sql: str, db: str | None = None) -> bool:
        try:
            res = self._run(sql, db)
        except cmdrun.CommandError as exc:
            self.last_error = str(exc)
            return False
        self.last_error = (res.stderr or res.stdout).strip() if res.retcode else ""
        return res.retcode == 0

    def query(self, sql: str, db: str | None = None) -> list[dict[str, str]] | None:
        """Rows as {column: text}, or None when psql failed (``last_error`` says why)."""
        try:
            res = self._run(f"COPY ({sql.strip().rstrip(';')}) TO STDOUT WITH CSV HEADER", db)
        except cmdrun.CommandError as exc:
            self.last_error = str(exc)
            return None
        if res.retcode != 0:
            self.last_error = (res.stderr or res.stdout).strip()
            return None
        self.last_error = ""
        rows = [row for row in csv.reader(io.StringIO(res.stdout)) if row]
        if not rows:
            return []
        header = rows[0]
        return [dict(zip(header, row, strict=False)) for row in rows[1:]]


# -- the catalog reads the states need --------------------------------------------------------------

def _bool(value: str | None) -> bool | None:
    return {"t": True, "f": False}.get(value or "")


def role(conn: Psql, name: str) -> dict[str, Any] | None:
    rows = conn.query(
        'SELECT r.rolname AS name, r.rolsuper AS superuser, r.rolinherit AS inherit, '
        'r.rolcreaterole AS createroles, r.rolcreatedb AS createdb, r.rolcanlogin AS login, '
        'r.rolreplication AS replication, r.rolvaliduntil::timestamp(0) AS valid_until, '
        '(SELECT array_agg(g.rolname) FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g '
        'ON m.roleid = g.oid WHERE m.member = r.oid) AS groups, a.rolpassword AS password '
        f'FROM pg_roles r LEFT JOIN pg_authid a ON r.oid = a.oid WHERE r.rolname = {literal(name)}')
    if not rows:
        return None
    row = rows[0]
    out: dict[str, Any] = {key: _bool(row[key]) for key in
                           ("superuser", "inherit", "createroles", "createdb", "login", "replication")}
    out["valid_until"] = row["valid_until"] or None
    out["groups"] = next(csv.reader([row["groups"].strip("{}")])) if row["groups"] else []
    out["password"] = row["password"] or None
    return out


def databases(conn: Psql) -> dict[str, dict[str, str]]:
    rows = conn.query(
        'SELECT d.datname AS "Name", r.rolname AS "Owner", pg_encoding_to_char(d.encoding) AS "Encoding", '
        'd.datcollate AS "Collate", d.datctype AS "Ctype", t.spcname AS "Tablespace" '
        "FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba JOIN pg_tablespace t ON t.oid = d.dattablespace")
    return {row.pop("Name"): row for row in rows or []}


def tablespaces(conn: Psql) -> dict[str, dict[str, str]]:
    rows = conn.query(
        'SELECT t.spcname AS "Name", r.rolname AS "Owner", t.spcoptions AS "Opts", '
        'pg_tablespace_location(t.oid) AS "Location" FROM pg_tablespace t JOIN pg_roles r ON r.oid = t.spcowner')
    return {row.pop("Name"): row for row in rows or []}


def schema(conn: Psql, dbname: str, name: str) -> dict[str, str] | None:
    rows = conn.query("SELECT n.nspname AS name, r.rolname AS owner FROM pg_namespace n "
                      f"JOIN pg_roles r ON r.oid = n.nspowner WHERE n.nspname = {literal(name)}", dbname)
    return rows[0] if rows else None


def extension(conn: Psql, name: str, db: str | None = None) -> dict[str, str] | None:
    rows = conn.query("SELECT e.extname, e.extversion, e.extrelocatable, n.nspname AS schema_name "
                      "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                      f"WHERE e.extname = {literal(name)}", db)
    return rows[0] if rows else None
