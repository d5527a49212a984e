"""A private PostgreSQL server for the whole suite (the ``postgres`` fixture, registered in
tests/conftest.py): the postgres ext_pillar and state tests, the master store's contract tests
(tests/stores/) and the plane tests run with ``master_store: postgres``.

``initdb`` + ``pg_ctl`` in a temp dir, on a free port of 127.0.0.1, as the ``postgres`` user when
run as root (fsync off: test data).  Debian's ``postgresql`` is installed with apt-get when
missing (root only; tools/test-packages.sh does it up front).  Under CI the tests fail rather
than skip when that is impossible (tests/conftest.py).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.netutil import free_port


def _pg_bindir() -> str | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if candidates:
        return os.path.dirname(candidates[-1])
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


def _install_postgresql() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql"], check=True,
                   env=env, stdout=subprocess.DEVNULL, timeout=900)


def _unavailable(reason: str) -> None:
    # Under CI, tests/conftest.py turns this skip into a failure.
    pytest.skip(f"PostgreSQL not available: {reason}")


@dataclass
class Postgres:
    host: str
    port: int
    user: str
    password: str
    db: str
    _ctl: Callable[[str], None] | None = field(default=None, repr=False)

    def settings(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user, "pass": self.password, "db": self.db}

    def dsn(self, db: str | None = None) -> str:
        """A libpq connection string (what master_store_dsn takes)."""
        return (f"host={self.host} port={self.port} user={self.user} password={self.password} "
                f"dbname={db or self.db}")

    def execute(self, sql: str, params: Any = None, db: str | None = None) -> None:
        import psycopg

        with psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                             dbname=db or self.db, autocommit=True) as conn:
            conn.execute(sql, params)

    def fresh_database(self, prefix: str = "t") -> str:
        """A new empty database; its name."""
        name = f"{prefix}_{secrets.token_hex(6)}"
        self.execute(f'CREATE DATABASE "{name}"')
        return name

    def stop(self) -> None:
        """Stop the server (fast shutdown: connections are cut), for outage tests."""
        assert self._ctl is not None
        self._ctl("stop")

    def start(self) -> None:
        assert self._ctl is not None
        self._ctl("start")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[test]')")
    bindir = _pg_bindir()
    if bindir is None:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            _unavailable("initdb not found and apt-get cannot install postgresql here (needs root on Debian)")
        try:
            _install_postgresql()
        except (subprocess.SubprocessError, OSError) as exc:
            _unavailable(f"apt-get install postgresql failed: {exc}")
        bindir = _pg_bindir()
        if bindir is None:
            _unavailable("postgresql installed but initdb not found")
    assert bindir is not None
    run_as: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        for name in ("postgres", "nobody"):
            try:
                run_as = pwd.getpwnam(name)
                break
            except KeyError:
                continue
        if run_as is None:
            _unavailable("running as root and no 'postgres' or 'nobody' user to run the server as")
    workdir = tempfile.mkdtemp(prefix="saltpan-pg-")
    password = secrets.token_hex(12)
    data = os.path.join(workdir, "data")
    pwfile = os.path.join(workdir, "pw")
    with open(pwfile, "w") as fh:
        fh.write(password + "\n")
    if run_as is not None:
        for path in (workdir, pwfile):
            os.chown(path, run_as.pw_uid, run_as.pw_gid)
    os.chmod(workdir, 0o700)

    def as_server_user() -> None:
        if run_as is not None:
            os.setgid(run_as.pw_gid)
            os.setgroups([])
            os.setuid(run_as.pw_uid)

    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8", HOME=workdir)
    env.pop("PGDATA", None)
    port = free_port()
    log_path = os.path.join(workdir, "log")

    def ctl(action: str) -> None:
        argv = [os.path.join(bindir, "pg_ctl"), "-D", data, "-l", log_path, "-w", "-t", "60"]
        if action == "start":
            argv += ["-o", f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off "
                           "-c max_connections=300", "start"]
        else:
            argv += ["-m", "fast", "stop"]
        subprocess.run(argv, check=True, preexec_fn=as_server_user, env=env, cwd=workdir, capture_output=True,
                       timeout=120)

    try:
        subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "salt", f"--pwfile={pwfile}",
                        "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8", "--no-sync"],
                       check=True, preexec_fn=as_server_user, env=env, cwd=workdir, capture_output=True,
                       timeout=120)
        ctl("start")
    except subprocess.CalledProcessError as exc:
        log = ""
        if os.path.exists(log_path):
            with open(log_path) as fh:
                log = fh.read()[-2000:]
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(f"starting PostgreSQL failed: {exc.stderr.decode(errors='replace')[-2000:]}\n{log}")
    server = Postgres("127.0.0.1", port, "salt", password, "postgres", ctl)
    try:
        server.execute("CREATE DATABASE salt")
        server.db = "salt"
        yield server
    finally:
        subprocess.run([os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
                       preexec_fn=as_server_user, env=env, cwd=workdir, capture_output=True, timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)
