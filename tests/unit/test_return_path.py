"""The master's return path stays linear in the number of returns (issue 20: 10,000 minions).

A job's row, with its list of expected minions, is read once per worker, not once per return:
with 10,000 minions the per-return read made one job's returns cost O(n²).
"""

from __future__ import annotations

import pytest
import zmq

from runtime import protocol, transport
from runtime.crypt.identity import Identity
from runtime.master.handlers import Refused
from runtime.master.handlers.context import WorkerContext
from runtime.master.handlers.jobs import JobHandlers


@pytest.fixture
def handlers(tmp_path):
    opts = {"pki_dir": str(tmp_path / "pki"), "sock_dir": str(tmp_path / "sock"), "cachedir": str(tmp_path / "cache")}
    zctx = zmq.Context()
    ctx = WorkerContext.open(opts, Identity.generate(), zctx, transport.ipc_address(opts["sock_dir"], "pub.ipc"))
    try:
        yield JobHandlers(ctx)
    finally:
        ctx.close()
        zctx.term()


def _ret(jid: str) -> protocol.JobReturn:
    return protocol.JobReturn(jid=jid, fun="test.ping", fun_args=[], ret=True, retcode=0, success=True)


def test_job_row_read_once_for_all_returns(handlers: JobHandlers) -> None:
    minions = [f"m{i:05d}" for i in range(2000)]
    handlers.ctx.jobs.add_job("20261126000000000001", "test.ping", [], minions, "list", "root", minions)
    reads = []
    real_job = handlers.ctx.jobs.job

    def counting(jid: str):
        reads.append(jid)
        return real_job(jid)

    handlers.ctx.jobs.job = counting  # type: ignore[method-assign]
    for minion in minions:
        handlers.job_return(minion, _ret("20261126000000000001"))
    assert len(reads) == 1
    assert len(handlers.ctx.jobs.returns("20261126000000000001")) == 2000


def test_cached_job_still_refuses_strangers_and_duplicates(handlers: JobHandlers) -> None:
    handlers.ctx.jobs.add_job("20261126000000000002", "test.ping", [], ["a", "b"], "list", "root", ["a", "b"])
    handlers.job_return("a", _ret("20261126000000000002"))
    with pytest.raises(Refused) as refused:
        handlers.job_return("c", _ret("20261126000000000002"))
    assert refused.value.reason == "not_targeted"
    with pytest.raises(Refused) as refused:
        handlers.job_return("a", _ret("20261126000000000002"))
    assert refused.value.reason == "duplicate"
    with pytest.raises(Refused) as refused:
        handlers.job_return("a", _ret("20261126000000000099"))
    assert refused.value.reason == "unknown_job"


def test_cache_is_bounded(handlers: JobHandlers) -> None:
    cache = handlers._targeted
    for index in range(cache.SIZE + 10):
        jid = f"2026112600000000{index:04d}"
        cache.put(jid, {"minions": ["a"], "jid": jid})
    assert len(cache._jobs) == cache.SIZE
    assert cache.get("20261126000000000000") is None
