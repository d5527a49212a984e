"""A private PostgreSQL server for the benchmarks (bench/cluster.py): ``initdb`` + ``pg_ctl`` in a
scratch directory, on a free port of 127.0.0.1, as the ``postgres`` user when run as root.

The same steps as the test suite's server (tests/pgserver.py), without pytest; unlike it, the
server keeps PostgreSQL's durable defaults (fsync and synchronous_commit on): the benchmark
measures what a cluster costs as an operator would run it.  ``stop()`` always removes it.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
from pathlib import Path

import common


def pg_bindir() -> str:
    """The newest installed PostgreSQL's bin directory, or SystemExit saying what to install."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    raise SystemExit("PostgreSQL is not installed (initdb not found): apt-get install postgresql")


class PgServer:
    def __init__(self, workdir: Path, max_connections: int = 300) -> None:
        """``workdir``: a new private directory (a short path: the server's socket lives there)."""
        self.workdir = workdir
        self.data = workdir / "data"
        self.bindir = pg_bindir()
        self.port = common.free_port()
        self.user = "saltpan"
        self.password = secrets.token_hex(12)
        self.max_connections = max_connections
        self.run_as: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self.run_as = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
            if self.run_as is None:
                raise SystemExit("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")
        self.started = False

    def _as_server_user(self) -> None:
        if self.run_as is not None:
            os.setgid(self.run_as.pw_gid)
            os.setgroups([])
            os.setuid(self.run_as.pw_uid)

    def _run(self, argv: list[str]) -> None:
        env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8", HOME=str(self.workdir))
        env.pop("PGDATA", None)
        proc = subprocess.run(argv, preexec_fn=self._as_server_user, env=env, cwd=str(self.workdir),
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            log = (self.workdir / "log").read_text(errors="replace")[-2000:] if (self.workdir / "log").exists() else ""
            raise SystemExit(f"{' '.join(argv[:2])} failed ({proc.returncode}): "
                             f"{proc.stderr.decode(errors='replace')[-2000:]}\n{log}")

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        pwfile = self.workdir / "pw"
        pwfile.write_text(self.password + "\n")
        if self.run_as is not None:
            for path in (self.workdir, pwfile):
                os.chown(path, self.run_as.pw_uid, self.run_as.pw_gid)
        os.chmod(self.workdir, 0o700)
        self._run([os.path.join(self.bindir, "initdb"), "-D", str(self.data), "-U", self.user, f"--pwfile={pwfile}",
                   "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8"])
        self.started = True  # from here on stop() has a server to stop, even if interrupted during the start
        self._run([os.path.join(self.bindir, "pg_ctl"), "-D", str(self.data), "-l", str(self.workdir / "log"), "-w",
                   "-t", "60", "-o", f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1 "
                   f"-c max_connections={self.max_connections}", "start"])

    def dsn(self, db: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.user} password={self.password} dbname={db}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if self.started:
            try:
                self._run([os.path.join(self.bindir, "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])
            except SystemExit:
                pid = self.postmaster_pid()
                if pid:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
            self.started = False
        shutil.rmtree(self.workdir, ignore_errors=True)
