"""The job cache's contract, on SQLite and on PostgreSQL: what is kept and read back, the first
return wins, and jids, returns and pruning under races between processes and masters."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from runtime import jid as jid_mod
from runtime.master.jobcache import ReturnRow
from runtime.master.store import factory
from tests.stores.conftest import in_processes, other_master


def test_a_job_and_its_returns_read_back(opts: dict[str, Any]) -> None:
    jobs = factory.open_job_cache(opts)
    arg = ["echo hi", {"__kwarg__": True, "test": True}, b"\xffraw"]
    assert jobs.add_job("20260101000000000001", "cmd.run", arg, ["web1", "db1"], "list", "root", ["web1", "db1"])
    job = jobs.job("20260101000000000001")
    assert job is not None
    assert (job["fun"], job["tgt"], job["tgt_type"], job["user"], job["minions"]) == (
        "cmd.run", ["web1", "db1"], "list", "root", ["db1", "web1"])
    assert job["arg"][:2] == ["echo hi", {"__kwarg__": True, "test": True}] and isinstance(job["arg"][2], str)
    assert abs(job["created"] - time.time()) < 60
    assert jobs.add_return("20260101000000000001", "web1", "cmd.run", {"out": "hi", "n": [1, 2.5, None]}, True, 0)
    assert jobs.add_return("20260101000000000001", "db1", "cmd.run", "ERROR", False, 1)
    assert jobs.returns("20260101000000000001") == {
        "db1": {"return": "ERROR", "success": False, "retcode": 1},
        "web1": {"return": {"out": "hi", "n": [1, 2.5, None]}, "success": True, "retcode": 0}}
    assert jobs.job("20260101000000000099") is None and jobs.returns("20260101000000000099") == {}
    jobs.close()


def test_a_jid_is_taken_once_and_the_first_return_wins(opts: dict[str, Any]) -> None:
    jobs = factory.open_job_cache(opts)
    assert jobs.add_job("20260101000000000002", "test.ping", [], "*", "glob", "root", ["a"])
    assert not jobs.add_job("20260101000000000002", "cmd.run", ["rm -rf /"], "*", "glob", "eve", ["a"])
    assert jobs.job("20260101000000000002")["fun"] == "test.ping"
    assert jobs.add_return("20260101000000000002", "a", "test.ping", True, True, 0)
    assert not jobs.add_return("20260101000000000002", "a", "test.ping", False, False, 1)
    assert jobs.returns("20260101000000000002")["a"]["return"] is True
    jobs.close()


def test_several_returns_are_stored_at_once_and_each_replay_is_refused(opts: dict[str, Any]) -> None:
    jobs = factory.open_job_cache(opts)
    jid = "20260101000000000003"
    assert jobs.add_job(jid, "test.ping", [], "*", "glob", "root", ["a", "b", "c", "d"])
    assert jobs.add_return(jid, "a", "test.ping", True, True, 0)
    batch = [ReturnRow(jid, "b", "test.ping", {"n": 1}, True, 0),
             ReturnRow(jid, "a", "test.ping", "again", False, 1),     # a returned before
             ReturnRow(jid, "c", "test.ping", [1, None], False, 2),
             ReturnRow(jid, "b", "test.ping", "twice", False, 1)]    # b earlier in this batch
    assert jobs.add_returns(batch) == [True, False, True, False]
    assert jobs.add_returns([]) == []
    assert jobs.add_returns([ReturnRow(jid, "d", "test.ping", True, True, 0)]) == [True]
    assert jobs.returns(jid) == {"a": {"return": True, "success": True, "retcode": 0},
                                 "b": {"return": {"n": 1}, "success": True, "retcode": 0},
                                 "c": {"return": [1, None], "success": False, "retcode": 2},
                                 "d": {"return": True, "success": True, "retcode": 0}}
    jobs.close()


def test_list_jobs_newest_first(opts: dict[str, Any]) -> None:
    jobs = factory.open_job_cache(opts)
    for n in range(5):
        jobs.add_job(f"2026010100000000001{n}", "test.ping", [], "*", "glob", "root", [])
    assert [j["jid"] for j in jobs.list_jobs(3)] == [f"2026010100000000001{n}" for n in (4, 3, 2)]
    assert len(jobs.list_jobs()) == 5
    jobs.close()


def _age(opts: dict[str, Any], jid: str, seconds: float) -> None:
    """Make a job (and its returns) look ``seconds`` old, as the clock would."""
    if opts.get("master_store") == "postgres":
        import psycopg

        with psycopg.connect(opts["master_store_dsn"], autocommit=True) as conn:
            conn.execute("UPDATE saltpan_jobs SET created = created - %s WHERE jid = %s", (seconds, jid))
            conn.execute("UPDATE saltpan_job_returns SET received = received - %s WHERE jid = %s", (seconds, jid))
    else:
        import sqlite3

        db = sqlite3.connect(str(Path(opts["cachedir"]) / "jobs.sqlite"))
        db.execute("UPDATE jobs SET created = created - ? WHERE jid = ?", (seconds, jid))
        db.execute("UPDATE returns SET received = received - ? WHERE jid = ?", (seconds, jid))
        db.commit()
        db.close()


def test_prune_deletes_old_jobs_with_their_returns(opts: dict[str, Any]) -> None:
    jobs = factory.open_job_cache(opts)
    for jid in ("20260101000000000021", "20260101000000000022"):
        jobs.add_job(jid, "test.ping", [], "*", "glob", "root", ["a"])
        jobs.add_return(jid, "a", "test.ping", True, True, 0)
    _age(opts, "20260101000000000021", 7200)
    assert jobs.prune(1.0) == 1
    assert jobs.job("20260101000000000021") is None and jobs.returns("20260101000000000021") == {}
    assert jobs.job("20260101000000000022") is not None and jobs.returns("20260101000000000022")
    assert jobs.prune(1.0) == 0
    jobs.close()


# -- races ---------------------------------------------------------------------------------------

def test_two_returns_for_one_jid_at_once_one_is_kept(opts: dict[str, Any], tmp_path: Path) -> None:
    jobs = factory.open_job_cache(opts)
    jobs.add_job("20260101000000000031", "test.ping", [], "*", "glob", "root", ["a"])
    jobs.close()

    def deliver(i: int) -> bool:
        cache = factory.open_job_cache(other_master(opts, tmp_path, f"m{i % 2}"))
        try:
            return cache.add_return("20260101000000000031", "a", "test.ping", f"copy {i}", True, i)
        finally:
            cache.close()

    stored = in_processes(deliver, 6)
    assert stored.count(True) == 1
    jobs = factory.open_job_cache(opts)
    kept = jobs.returns("20260101000000000031")["a"]
    assert kept == {"return": f"copy {stored.index(True)}", "success": True, "retcode": stored.index(True)}
    jobs.close()


def test_publishers_drawing_jids_at_once_get_distinct_jobs(opts: dict[str, Any], tmp_path: Path) -> None:
    factory.check_store(opts)            # what the master does before it forks its workers

    def publish(i: int) -> list[str]:
        cache = factory.open_job_cache(other_master(opts, tmp_path, f"m{i % 2}"))
        out = []
        try:
            for n in range(20):
                while True:   # what JobHandlers.new_jid does: draw again when the jid is taken
                    jid = jid_mod.new_jid()
                    if cache.add_job(jid, "test.arg", [i, n], "*", "glob", f"user{i}", []):
                        out.append(jid)
                        break
            return out
        finally:
            cache.close()

    drawn = [jid for result in in_processes(publish, 4) for jid in result]
    assert len(set(drawn)) == 80
    jobs = factory.open_job_cache(opts)
    assert sorted((j["user"], tuple(j["arg"])) for j in jobs.list_jobs(200)) == sorted(
        (f"user{i}", (i, n)) for i in range(4) for n in range(20))
    jobs.close()


def test_concurrent_pruning_deletes_each_job_once(opts: dict[str, Any], tmp_path: Path) -> None:
    jobs = factory.open_job_cache(opts)
    old = [f"202601010000000001{n:02d}" for n in range(40)]
    for jid in old:
        jobs.add_job(jid, "test.ping", [], "*", "glob", "root", ["a", "b"])
        jobs.add_return(jid, "a", "test.ping", True, True, 0)
        _age(opts, jid, 7200)
    jobs.add_job("20990101000000000001", "test.ping", [], "*", "glob", "root", ["a"])
    jobs.close()

    def prune(i: int) -> int:
        cache = factory.open_job_cache(other_master(opts, tmp_path, f"m{i}"))
        try:
            return cache.prune(1.0)
        finally:
            cache.close()

    counts = in_processes(prune, 3)
    assert sum(counts) == 40
    jobs = factory.open_job_cache(opts)
    assert [j["jid"] for j in jobs.list_jobs(100)] == ["20990101000000000001"]
    assert all(jobs.returns(jid) == {} for jid in old)
    jobs.close()
