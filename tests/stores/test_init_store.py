"""``saltpan master --init-store`` on an empty and on an existing store, the schema check at
master start, and the change log that tells masters sharing a database what the others did."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime.crypt.identity import Identity
from runtime.master.changes import Wakeup
from runtime.master.store import factory, pg_schema
from runtime.master.store.errors import SchemaError
from tests.pgserver import Postgres

REPO = Path(__file__).resolve().parents[2]


def init_store(conf: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtime", "master", "--init-store", "-c", str(conf)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def master_conf(tmp_path: Path, **opts: Any) -> Path:
    conf = tmp_path / "master.yaml"
    conf.write_text(yaml.safe_dump({"root_dir": str(tmp_path / "root"), "sock_dir": str(tmp_path / "sock"),
                                    "id": "m1", **opts}))
    return conf


def test_init_store_on_postgres_creates_then_leaves_alone(postgres: Postgres, tmp_path: Path) -> None:
    db = postgres.fresh_database("init")
    conf = master_conf(tmp_path, master_store="postgres", master_store_dsn=postgres.dsn(db))
    first = init_store(conf)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [f"PostgreSQL 127.0.0.1:{postgres.port}/{db}: schema created "
                                         f"(version {pg_schema.LATEST})"]
    assert postgres.password not in first.stdout + first.stderr
    again = init_store(conf)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"PostgreSQL 127.0.0.1:{postgres.port}/{db}: schema version "
                                         f"{pg_schema.LATEST}, up to date"]


def test_init_store_imports_the_key_files_of_a_master_moving_to_postgres(postgres: Postgres,
                                                                        tmp_path: Path) -> None:
    sqlite_opts = {"pki_dir": str(tmp_path / "root" / "etc" / "saltpan" / "pki" / "master"),
                   "cachedir": str(tmp_path / "cache"), "sock_dir": str(tmp_path / "sock")}
    files = factory.open_key_store(sqlite_opts)
    web = Identity.generate().public_raw
    files.admit("web1", web, auto_accept=True)
    files.admit("db1", Identity.generate().public_raw)
    files.close()
    db = postgres.fresh_database("move")
    conf = master_conf(tmp_path, master_store="postgres", master_store_dsn=postgres.dsn(db))
    out = init_store(conf)
    assert out.returncode == 0, out.stderr
    assert f"imported 2 minion key(s) from {sqlite_opts['pki_dir']}" in out.stdout
    keys = factory.open_key_store({**sqlite_opts, "master_store": "postgres", "master_store_dsn": postgres.dsn(db)})
    assert keys.is_accepted("web1", web) and keys.lookup("db1").status == "minions_pre"
    keys.close()
    assert "imported" not in init_store(conf).stdout          # once


def test_init_store_on_sqlite(tmp_path: Path) -> None:
    conf = master_conf(tmp_path)
    out = init_store(conf)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("key store: ") and lines[0].endswith("(files, Salt's layout)")
    assert any(line.startswith("job cache: ") and "jobs.sqlite (SQLite, schema version 1)" in line for line in lines)
    assert (tmp_path / "root" / "var" / "cache" / "saltpan" / "master" / "minion_data.sqlite").exists()
    assert init_store(conf).stdout == out.stdout


def test_init_store_unreachable_says_so(tmp_path: Path) -> None:
    from tests.netutil import free_port

    conf = master_conf(tmp_path, master_store="postgres",
                       master_store_dsn=f"host=127.0.0.1 port={free_port()} user=x password=secret99 dbname=y",
                       master_store_connect_timeout=2)
    out = init_store(conf)
    assert out.returncode == 2
    assert out.stderr.startswith("saltpan master --init-store: PostgreSQL 127.0.0.1:")
    assert "is unavailable" in out.stderr and "secret99" not in out.stderr


def test_master_start_needs_a_current_schema(postgres: Postgres, tmp_path: Path) -> None:
    db = postgres.fresh_database("check")
    opts = {"master_store": "postgres", "master_store_dsn": postgres.dsn(db), "pki_dir": str(tmp_path / "pki")}
    with pytest.raises(SchemaError, match="no saltpan schema yet: run 'saltpan master --init-store'"):
        factory.check_store(opts)
    factory.init_store(opts)
    factory.check_store(opts)
    postgres.execute("INSERT INTO saltpan_schema VALUES (%s, 0, 'from the future')", (pg_schema.LATEST + 1,), db=db)
    with pytest.raises(SchemaError, match="newer than this saltpan knows"):
        factory.check_store(opts)
    with pytest.raises(SchemaError, match="upgrade saltpan"):
        factory.init_store(opts)


def test_a_key_change_is_announced_to_a_listening_master(postgres: Postgres, tmp_path: Path) -> None:
    db = postgres.fresh_database("changes")
    opts = {"master_store": "postgres", "master_store_dsn": postgres.dsn(db), "pki_dir": str(tmp_path / "pki"),
            "id": "master-a"}
    factory.init_store(opts)
    changes = factory.open_change_log(opts)
    start = changes.latest()
    woke: list[Wakeup] = []
    listener = threading.Thread(target=lambda: woke.append(changes.wait(20)))
    changes.wait(0.01)                       # LISTEN before the change
    listener.start()
    time.sleep(0.2)
    keys = factory.open_key_store({**opts, "id": "master-b"})
    keys.admit("web1", Identity.generate().public_raw, auto_accept=True)
    keys.delete("web1")
    listener.join(20)
    assert woke == [Wakeup(frozenset({"changes"}))]        # a key change: the changes log only
    seen = [(c.topic, c.data, c.master_id) for c in changes.since(start)]
    assert seen == [("key", {"action": "admit", "changed": {"minions": ["web1"]}}, "master-b"),
                    ("key", {"action": "delete", "changed": {"minions": ["web1"]}}, "master-b")]
    assert changes.prune(3600) == 0 and changes.prune(-1) == 2 and changes.since(0) == []
    keys.close()
    changes.close()


def test_a_master_without_its_database_does_not_start(postgres: Postgres, tmp_path: Path) -> None:
    from tests.netutil import free_port

    db = postgres.fresh_database("nostart")
    for dsn, says in ((f"host=127.0.0.1 port={free_port()} user=x password=secret99 dbname=y", "is unavailable"),
                      (postgres.dsn(db), "no saltpan schema yet: run 'saltpan master --init-store'")):
        conf = master_conf(tmp_path, master_store="postgres", master_store_dsn=dsn, master_store_connect_timeout=2,
                           ret_port=free_port(), publish_port=free_port(), log_file=None)
        out = subprocess.run([sys.executable, "-m", "runtime", "master", "-c", str(conf)], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out.stderr
        assert says in out.stderr and "secret99" not in out.stderr and postgres.password not in out.stderr


def test_backup_and_restore_as_documented(postgres: Postgres, tmp_path: Path) -> None:
    """docs/operations.md, Backups: pg_dump -Fc -t 'saltpan_*', pg_restore into an empty
    database, --init-store finds it current; the keys and jobs are all there."""
    import os

    from tests.pgserver import _pg_bindir

    bindir = _pg_bindir()
    assert bindir is not None
    source, target = postgres.fresh_database("backup"), postgres.fresh_database("restore")
    opts = {"master_store": "postgres", "master_store_dsn": postgres.dsn(source), "pki_dir": str(tmp_path / "pki"),
            "id": "m1"}
    factory.init_store(opts)
    keys = factory.open_key_store(opts)
    web = Identity.generate().public_raw
    keys.admit("web1", web, auto_accept=True)
    keys.close()
    jobs = factory.open_job_cache(opts)
    jobs.add_job("20260101000000000001", "test.ping", [], "*", "glob", "root", ["web1"])
    jobs.add_return("20260101000000000001", "web1", "test.ping", True, True, 0)
    jobs.close()
    env = dict(os.environ, PGPASSWORD=postgres.password)
    common = ["-h", postgres.host, "-p", str(postgres.port), "-U", postgres.user]
    dump = tmp_path / "saltpan.dump"
    subprocess.run([f"{bindir}/pg_dump", *common, "-Fc", "-t", "saltpan_*", "-f", str(dump), source], env=env,
                   check=True, capture_output=True, timeout=60)
    subprocess.run([f"{bindir}/pg_restore", *common, "-d", target, str(dump)], env=env, check=True,
                   capture_output=True, timeout=60)
    restored = {**opts, "master_store_dsn": postgres.dsn(target)}
    assert factory.init_store(restored)[0].endswith("up to date")
    keys = factory.open_key_store(restored)
    assert keys.is_accepted("web1", web)
    keys.admit("web2", Identity.generate().public_raw)
    keys.close()
    jobs = factory.open_job_cache(restored)
    assert jobs.returns("20260101000000000001")["web1"]["return"] is True
    jobs.close()
    changes = factory.open_change_log(restored)
    assert changes.since(0)[-1].data == {"action": "admit", "changed": {"minions_pre": ["web2"]}}   # sequence restored
    changes.close()
