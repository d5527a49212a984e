"""sql_base semantics, the sqlite3 driver on a temp file, and the postgres driver on a real server.

Expected shapes marked "Salt" were produced by Salt 3008's own sql_base on the same rows.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time

import pytest
from ext_pillar_helpers import compile_pillar, make_opts

from ext_pillar import DriverError, postgres, sql_base
from ext_pillar import sqlite3 as sqlite_driver

DOC_ROWS = [("a", "b", "c", "d", "e", 1), ("a", "b", "c", "f", "g", 2), ("a", "z", "h", "y", "j", 3),
            ("a", "z", "h", "y", "k", 4)]
KV_ROWS = [("web", "role", "frontend"), ("web", "port", 80), ("web", "port", 443), ("db", "port", 5432)]


def nest(names, rows, **options):
    query = sql_base.Query(None, "q", **options)
    focus: dict = {}
    nester = sql_base._Nester(focus, query, names)
    for row in rows:
        nester.add(row)
    nester.finish()
    return focus


@pytest.mark.parametrize(("rows", "options", "expected"), [
    (DOC_ROWS, {"depth": 5, "with_lists": [1, 3]},
     {"a": [{"c": [{"e": 1}, {"g": 2}]}, {"h": [{"j": 3, "k": 4}]}]}),
    (KV_ROWS, {}, {"web": {"role": "frontend", "port": 443}, "db": {"port": 5432}}),
    (KV_ROWS, {"depth": 1}, {"web": {"k": "port", "v": 443}, "db": {"k": "port", "v": 5432}}),
    (KV_ROWS, {"as_list": True}, {"web": {"role": "frontend", "port": [80, 443]}, "db": {"port": 5432}}),
    (KV_ROWS, {"depth": 1, "as_list": True},
     {"web": {"k": ["role", "port", "port"], "v": ["frontend", 80, 443]}, "db": {"k": "port", "v": 5432}}),
    (KV_ROWS, {"with_lists": [2]}, {"web": {"role": ["frontend"], "port": [80, 443]}, "db": {"port": [5432]}}),
    ([("a", "x", 1), ("a", "y", 2), ("a", "x", None)], {}, {"a": {"x": None, "y": 2}}),
    ([("a", "x", 1), ("a", "y", 2), ("a", "x", None)], {"ignore_null": True}, {"a": {"x": 1, "y": 2}}),
])
def test_nesting_matches_salt(rows, options, expected):
    names = ["grp", "k", "v"] if len(rows[0]) == 3 else [f"c{i}" for i in range(len(rows[0]))]
    assert nest(names, rows, **options) == expected


def test_extract_queries_forms_and_order():
    queries = sql_base.extract_queries(
        ["SELECT 1", ["SELECT 2", 2], {"query": "SELECT 3", "as_list": True, "with_lists": "1,3"}, "", 5],
        {"zeta": "SELECT z", "alpha": {"query": "SELECT a", "ignore_null": True}, "skip": {"depth": 1}})
    assert [(q.root, q.query, q.depth, q.as_list, q.with_lists, q.ignore_null) for q in queries] == [
        (None, "SELECT 1", 0, False, [], False),
        (None, "SELECT 2", 2, False, [], False),
        (None, "SELECT 3", 0, True, [1, 3], False),
        ("alpha", "SELECT a", 0, False, [], True),
        ("zeta", "SELECT z", 0, False, [], False),
    ]


@pytest.mark.parametrize(("spec", "message"), [
    ({"query": "SELECT 1", "depht": 2}, "unknown query option(s) depht (known: query, depth, as_list, as_json, "
                                        "with_lists, ignore_null)"),
    ({"query": "SELECT 1", "depth": -1}, "depth must be a whole number >= 0, got -1"),
    ({"query": "SELECT 1", "as_list": "yes"}, "as_list must be true or false, got 'yes'"),
    ({"query": "SELECT 1", "with_lists": "1,x"}, "with_lists must be column numbers like \"1,3\" or [1, 3], "
                                                 "got '1,x'"),
])
def test_bad_query_options(spec, message):
    with pytest.raises(DriverError) as info:
        sql_base.extract_queries([spec], {})
    assert info.value.message == message


# -- sqlite3 --------------------------------------------------------------------------------


@pytest.fixture
def sqlite_db(tmp_path):
    path = tmp_path / "pillar.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE pillar (minion TEXT, grp TEXT, k TEXT, v TEXT);
        INSERT INTO pillar VALUES ('web01', 'app', 'name', 'shop'), ('web01', 'app', 'port', '8080'),
                                  ('web01', 'dns', 'server', '10.0.0.1'), ('web01', 'dns', 'server', '10.0.0.2'),
                                  ('db01', 'app', 'name', 'db');
        CREATE TABLE docs (minion TEXT, doc TEXT);
        INSERT INTO docs VALUES ('web01', '{"a": {"b": [1, 2]}, "c": 3}'), ('web01', '{"a": {"b": [1, 3]}, "d": 4}');
    """)
    conn.commit()
    conn.close()
    return path


def test_sqlite3_driver_in_a_compile(tmp_path, sqlite_db):
    opts = make_opts(tmp_path, sqlite3={"database": str(sqlite_db), "timeout": 2.0}, ext_pillar=[
        {"sqlite3": ["SELECT grp, k, v FROM pillar WHERE minion = ? AND grp = 'app'"]},
        {"sqlite3": {"dns": {"query": "SELECT k, v FROM pillar WHERE minion = ? AND grp = 'dns'",
                             "as_list": True},
                     "docs": {"query": "SELECT doc FROM docs WHERE minion = ?", "as_json": True, "as_list": True}}},
    ])
    result = compile_pillar(opts, "web01")
    assert result.pillar == {
        "app": {"name": "shop", "port": "8080"},
        "dns": {"server": ["10.0.0.1", "10.0.0.2"]},
        "docs": {"a": {"b": [1, 2, 3]}, "c": 3, "d": 4},
    }
    assert compile_pillar(opts, "db01").pillar == {"app": {"name": "db"}, "dns": {}, "docs": {}}


def test_sqlite3_settings_forms(tmp_path):
    assert sqlite_driver.settings({}) == {"database": "/var/lib/salt/pillar.db", "timeout": 5.0}
    assert sqlite_driver.settings({"sqlite3.database": "/x.db"})["database"] == "/x.db"
    conf = tmp_path / "minion"
    assert sqlite_driver.settings({"sqlite3": {"database": "db/p.db"}, "conf_file": str(conf)}) == {
        "database": str(tmp_path / "db" / "p.db"), "timeout": 5.0}


@pytest.mark.parametrize(("query", "message"), [
    ("SELECT k, v FROM nope WHERE minion = ?", "query 'SELECT k, v FROM nope WHERE minion = ?' failed: "
                                               "no such table: nope"),
    ("SELECT k, v FROM pillar", "query 'SELECT k, v FROM pillar' failed: Incorrect number of bindings supplied. "
                                "The current statement uses 0, and there are 1 supplied. (the query must use the "
                                "minion id placeholder ? exactly once)"),
    ("DELETE FROM pillar WHERE minion = ?", "query 'DELETE FROM pillar WHERE minion = ?' failed: attempt to write "
                                            "a readonly database"),
])
def test_sqlite3_query_errors(tmp_path, sqlite_db, query, message):
    opts = make_opts(tmp_path, sqlite3={"database": str(sqlite_db)}, ext_pillar=[{"sqlite3": [query]}])
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        f"Failed to load ext_pillar sqlite3 for minion web01: {message}"]
    assert sqlite3.connect(sqlite_db).execute("SELECT count(*) FROM pillar").fetchone() == (5,)


def test_sqlite3_missing_database_is_not_created(tmp_path):
    missing = tmp_path / "missing.db"
    opts = make_opts(tmp_path, sqlite3={"database": str(missing)}, ext_pillar=[{"sqlite3": ["SELECT 1, ?"]}])
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        f"Failed to load ext_pillar sqlite3 for minion web01: SQLite database {missing} does not exist (set "
        "`sqlite3: {database: PATH}` in the config)"]
    assert not missing.exists()


def test_sqlite3_long_query_is_interrupted_at_the_deadline(tmp_path, sqlite_db):
    endless = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
               "SELECT ?, max(i) FROM n")
    opts = make_opts(tmp_path, sqlite3={"database": str(sqlite_db)}, ext_pillar=[{"sqlite3": [endless]}],
                     ext_pillar_timeout=0.3)
    loader_started = time.monotonic()
    result = compile_pillar(opts, "web01")
    assert time.monotonic() - loader_started < 1.5
    assert result.pillar["_errors"] == [
        "Failed to load ext_pillar sqlite3 for minion web01: query 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT "
        "i + 1 FROM n) SELECT ?, max...' failed: interrupted: ext_pillar_timeout passed"]
    # the abandoned query stops by itself right after the deadline: no thread keeps spinning
    time.sleep(0.5)
    assert not [t for t in threading.enumerate() if t.name == "ext_pillar:sqlite3"]


# -- postgres ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg(postgres):
    postgres.execute("DROP TABLE IF EXISTS settings, hosts")
    postgres.execute("""
        CREATE TABLE settings (minion text, role text, k text, v text, pos int);
        INSERT INTO settings VALUES
          ('web01', 'nginx', 'workers', '4', 1), ('web01', 'nginx', 'port', '80', 2),
          ('web01', 'nginx', 'port', '443', 3), ('web01', 'users', 'alice', 'admin', 4),
          ('web01', 'users', 'bob', NULL, 5), ('default', 'users', 'bob', 'dev', 0),
          ('db01', 'postgres', 'port', '5432', 1);
        CREATE TABLE hosts (minion text, price numeric(8,2), cores numeric, born date, seen timestamptz,
                            tags text[], doc jsonb, id uuid);
        INSERT INTO hosts VALUES ('web01', 12.50, 8, '2024-01-02', '2024-01-02 03:04:05+00', '{a,b}',
                                  '{"rack": {"row": 3}, "ok": true}', '12345678-1234-5678-1234-567812345678');
    """)
    return postgres


def _pg_opts(tmp_path, pg, ext, **extra):
    return make_opts(tmp_path, postgres=pg.settings(), ext_pillar=ext, **extra)


def test_postgres_queries_in_a_compile(tmp_path, pg):
    ext = [{"postgres": {
        "nginx": {"query": "SELECT k, v FROM settings WHERE minion = %s AND role = 'nginx' ORDER BY pos",
                  "as_list": True},
        "users": {"query": "SELECT k, v FROM settings WHERE minion IN ('default', %s) AND role = 'users' "
                           "ORDER BY pos", "ignore_null": True},
        "count": "SELECT 'rows', count(*) FROM settings WHERE minion = %s",
    }}]
    assert compile_pillar(_pg_opts(tmp_path, pg, ext), "web01").pillar == {
        "count": {"rows": 5},
        "nginx": {"workers": "4", "port": ["80", "443"]},
        "users": {"bob": "dev", "alice": "admin"},
    }


def test_postgres_list_query_at_the_root(tmp_path, pg):
    ext = [{"postgres": ["SELECT role, k, v FROM settings WHERE minion = %s ORDER BY pos"]}]
    assert compile_pillar(_pg_opts(tmp_path, pg, ext), "web01").pillar == {
        "nginx": {"workers": "4", "port": "443"},
        "users": {"alice": "admin", "bob": None},
    }
    assert compile_pillar(_pg_opts(tmp_path, pg, ext), "db01").pillar == {"postgres": {"port": "5432"}}


def test_postgres_values_become_plain_data(tmp_path, pg):
    ext = [{"postgres": {"host": {"query": "SELECT minion, price, cores, born, seen, tags, id FROM hosts "
                                           "WHERE minion = %s", "depth": 1},
                         "doc": {"query": "SELECT doc FROM hosts WHERE minion = %s", "as_json": True}}}]
    pillar = compile_pillar(_pg_opts(tmp_path, pg, ext), "web01").pillar
    assert pillar == {
        "host": {"web01": {"price": 12.5, "cores": 8, "born": "2024-01-02", "seen": "2024-01-02T03:04:05+00:00",
                           "tags": ["a", "b"], "id": "12345678-1234-5678-1234-567812345678"}},
        "doc": {"rack": {"row": 3}, "ok": True},
    }


def test_postgres_wrong_password(tmp_path, pg):
    settings = pg.settings() | {"pass": "wrong"}
    opts = make_opts(tmp_path, postgres=settings, ext_pillar=[{"postgres": ["SELECT 1, %s"]}])
    errors = compile_pillar(opts, "web01").pillar["_errors"]
    assert len(errors) == 1
    assert errors[0].startswith(f"Failed to load ext_pillar postgres for minion web01: cannot connect to PostgreSQL "
                                f"salt@127.0.0.1:{pg.port}/salt: ")
    assert "password authentication failed" in errors[0]
    assert "wrong" not in errors[0]


def test_postgres_server_down(tmp_path, pg):
    from tests.netutil import free_port

    port = free_port()
    opts = make_opts(tmp_path, postgres=pg.settings() | {"port": port}, ext_pillar=[{"postgres": ["SELECT 1, %s"]}])
    errors = compile_pillar(opts, "web01").pillar["_errors"]
    assert errors[0].startswith(f"Failed to load ext_pillar postgres for minion web01: cannot connect to PostgreSQL "
                                f"salt@127.0.0.1:{port}/salt: ")


def test_postgres_query_errors(tmp_path, pg):
    ext = [{"postgres": {"a": "SELECT k, v FROM nope WHERE minion = %s"}},
           {"postgres": {"b": "SELECT k, v FROM settings"}},
           {"postgres": {"c": "DELETE FROM settings WHERE minion = %s"}}]
    errors = compile_pillar(_pg_opts(tmp_path, pg, ext), "web01").pillar["_errors"]
    assert errors == [
        "Failed to load ext_pillar postgres for minion web01: query 'a' failed: relation \"nope\" does not exist",
        "Failed to load ext_pillar postgres for minion web01: query 'b' failed: the query has 0 placeholders but 1 "
        "parameters were passed (the query must use the minion id placeholder %s exactly once; write a literal % "
        "as %%)",
        "Failed to load ext_pillar postgres for minion web01: query 'c' failed: cannot execute DELETE in a "
        "read-only transaction",
    ]


def test_postgres_statement_is_cancelled_at_the_deadline(tmp_path, pg):
    ext = [{"postgres": {"slow": "SELECT %s, pg_sleep(5)"}}]
    started = time.monotonic()
    result = compile_pillar(_pg_opts(tmp_path, pg, ext, ext_pillar_timeout=1), "web01")
    assert time.monotonic() - started < 2.5
    assert result.pillar["_errors"] == [
        "Failed to load ext_pillar postgres for minion web01: query 'slow' failed: canceling statement due to "
        "statement timeout (ext_pillar_timeout)"]


def test_postgres_without_psycopg(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(DriverError) as info:
        postgres.ext_pillar("web01", {}, "SELECT 1, %s", opts={})
    assert info.value.message == ("the postgres driver needs psycopg 3: pip install 'saltpan[postgres]' (or pip "
                                  "install 'psycopg[binary]')")


def test_postgres_settings_defaults():
    assert postgres.settings({}) == {"host": "localhost", "user": "salt", "pass": "salt", "db": "salt", "port": 5432}
    assert postgres.settings({"postgres": {"db": "pillar", "other": 1}})["db"] == "pillar"
