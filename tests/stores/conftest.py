"""The master store's contract tests run once per backend: ``opts`` is a master config with
``master_store: sqlite`` (files and SQLite under a temp dir) or ``master_store: postgres`` (a
database of the suite's PostgreSQL server, emptied before each test).

Races run in separate processes (``in_processes``), each opening its own store through the
factory as a master's worker (or another master) does.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.master.store import factory
from tests.pgserver import Postgres

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(scope="session")
def store_database(postgres: Postgres) -> str:
    """One database with the current schema for the contract tests (emptied per test)."""
    name = postgres.fresh_database("stores")
    lines = factory.init_store({"master_store": "postgres", "master_store_dsn": postgres.dsn(name),
                                "pki_dir": tempfile.mkdtemp(prefix="sp-pki-"), "cachedir": "/nonexistent"})
    assert "schema created" in lines[0], lines
    return name


def _empty(postgres: Postgres, db: str) -> None:
    postgres.execute("TRUNCATE saltpan_minion_keys, saltpan_jobs, saltpan_job_returns, saltpan_minion_data, "
                     "saltpan_nonces, saltpan_masters, saltpan_sessions, saltpan_changes, saltpan_events, saltpan_cluster",
                     db=db)


@pytest.fixture(params=BACKENDS)
def opts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A master's config for this test's store (both backends)."""
    config: dict[str, Any] = {"pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"),
                              "sock_dir": str(tmp_path / "sock"), "id": "master-a", "max_pending_keys": 5}
    if request.param == "postgres":
        postgres: Postgres = request.getfixturevalue("postgres")
        db = request.getfixturevalue("store_database")
        _empty(postgres, db)
        config.update(master_store="postgres", master_store_dsn=postgres.dsn(db))
    yield config


def other_master(opts: dict[str, Any], tmp_path: Path, master_id: str = "master-b") -> dict[str, Any]:
    """A second master sharing the store of ``opts``: its own sock_dir (sessions) and id; on
    SQLite the same files (a second process of one master is what SQLite can share)."""
    sock = tmp_path / f"sock-{master_id}"
    return {**opts, "id": master_id, "sock_dir": str(sock)}


def in_processes(work: Callable[[int], Any], count: int, timeout: float = 60.0) -> list[Any]:
    """Run ``work(i)`` in ``count`` forked processes released together; their results by i.
    An exception in a process fails the test with its message."""
    mp = multiprocessing.get_context("fork")
    barrier = mp.Barrier(count)
    results = mp.Queue()

    def child(i: int) -> None:
        try:
            barrier.wait(timeout)
            results.put((i, "ok", work(i)))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results.put((i, "error", f"{type(exc).__name__}: {exc}"))
        finally:
            results.close()
            results.join_thread()
            os._exit(0)

    procs = [mp.Process(target=child, args=(i,)) for i in range(count)]
    for proc in procs:
        proc.start()
    out: dict[int, Any] = {}
    try:
        for _ in procs:
            i, status, value = results.get(timeout=timeout)
            if status != "ok":
                raise AssertionError(f"process {i} failed: {value}")
            out[i] = value
    finally:
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    return [out[i] for i in range(count)]
