"""One factory builds the stores: no other module names a backend; config errors are clear;
a master on SQLite never loads psycopg."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.config import ConfigError
from runtime.master.store import factory

REPO = Path(__file__).resolve().parents[2]
STORE = "runtime.master.store"
FACTORY = f"{STORE}.factory"
BACKEND_MODULES = {"file_keys", "sqlite_db", "sqlite_jobs", "sqlite_data", "sqlite_sessions",
                   "pg", "pg_schema", "pg_keys", "pg_jobs", "pg_data", "pg_sessions", "pg_changes"}
BACKEND_CLASSES = {"FileKeyStore", "SQLiteJobCache", "SQLiteDataCache", "SQLiteSessionStore", "PgKeyStore",
                   "PgJobCache", "PgDataCache", "PgSessionStore", "PgChangeLog", "PgDatabase"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_only_the_factory_names_a_backend() -> None:
    offenders = []
    for package in ("runtime", "compiler", "ext_pillar", "bench"):
        for path in sorted((REPO / package).rglob("*.py")):
            module = _module_name(path)
            if module.startswith(STORE + ".") and module != f"{STORE}.errors":
                continue          # the store package itself: the factory and the backends
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for name in sorted(_imports(tree)):
                if name.startswith(STORE + ".") and name.split(".")[3] in BACKEND_MODULES:
                    offenders.append(f"{path.relative_to(REPO)} imports {name}")
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id in BACKEND_CLASSES:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} names {node.id}")
    assert not offenders, "build stores with runtime.master.store.factory:\n" + "\n".join(offenders)


def test_within_the_store_package_only_the_factory_picks_a_backend() -> None:
    """Backends may build on each other (the PostgreSQL session store keeps its sessions in the
    SQLite one), but only the factory imports both kinds, and nothing imports the factory's
    callers back."""
    for path in sorted((REPO / "runtime" / "master" / "store").glob("*.py")):
        module = _module_name(path)
        imported = {n.split(".")[3] for n in _imports(ast.parse(path.read_text())) if n.startswith(STORE + ".")}
        if module == FACTORY:
            assert {"file_keys", "sqlite_jobs", "pg_keys", "pg_jobs"} <= imported
        elif module.split(".")[-1].startswith("pg"):
            assert not imported & {"file_keys", "sqlite_jobs", "sqlite_data"}, module
        else:
            assert not {i for i in imported if i.startswith("pg")}, module


def test_config_errors_are_clear(tmp_path: Path) -> None:
    base = {"pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "c"), "sock_dir": str(tmp_path / "s"),
            "conf_file": "/etc/saltpan/master"}
    with pytest.raises(ConfigError, match="master_store must be sqlite or postgres, got 'mysql'"):
        factory.open_job_cache({**base, "master_store": "mysql"})
    with pytest.raises(ConfigError, match=r"/etc/saltpan/master: master_store: postgres needs master_store_dsn"):
        factory.open_job_cache({**base, "master_store": "postgres"})
    with pytest.raises(ConfigError, match="master_store_pool_size must be at least 1"):
        factory.open_job_cache({**base, "master_store": "postgres", "master_store_dsn": "host=x",
                                "master_store_pool_size": 0})


def test_master_id_is_salts_default_unless_set() -> None:
    import socket

    assert factory.master_id({"id": "m1"}) == "m1"
    assert factory.master_id({}) == f"{socket.getfqdn()}_master"


def test_a_master_on_sqlite_never_loads_psycopg(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from runtime.master.store import factory\n"
        f"opts = {{'pki_dir': {str(tmp_path / 'pki')!r}, 'cachedir': {str(tmp_path / 'c')!r}, "
        f"'sock_dir': {str(tmp_path / 's')!r}}}\n"
        "stores = factory.open_master_stores(opts)\n"
        "stores.keys.list_keys(); stores.jobs.list_jobs(); stores.data.all('grains'); stores.sessions.reset()\n"
        "stores.close()\n"
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_damaged_sqlite_file_stops_the_start_with_what_to_do(tmp_path: Path) -> None:
    from runtime.master.store.errors import StoreError

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "jobs.sqlite").write_bytes(b"not a database " * 20)
    opts = {"pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "c"), "sock_dir": str(tmp_path / "s")}
    with pytest.raises(StoreError, match="file is not a database; move a damaged file away"):
        factory.check_store(opts)
    (tmp_path / "c" / "jobs.sqlite").unlink()
    factory.check_store(opts)                      # creates every file, once, before the workers fork
    assert sorted(p.name for p in (tmp_path / "c").iterdir() if p.suffix == ".sqlite") == [
        "jobs.sqlite", "minion_data.sqlite"]
