"""Requests handed to a worker together (the request proxy does so under a backlog of minions'
requests): each gets its own reply, in order, and the minions' returns among them are stored
with one job cache call (one commit) — a request after them sees them stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import codec, protocol
from runtime.crypt.errors import RemoteRefusal
from runtime.master.jobcache import ReturnRow
from tests.security.test_fuzz import Harness

MINION = "fuzz01"      # the harness's session


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    yield h
    h.close()


def _return(jid: str, ret: Any = True) -> dict[str, Any]:
    return {"cmd": "_return", "id": MINION, "jid": jid, "fun": "test.ping", "fun_args": [], "return": ret,
            "retcode": 0, "success": True}


def _outcome(harness: Harness, counter: int, reply: bytes) -> Any:
    """``"ok"``, the reason of a refusal, or the reply's payload."""
    try:
        payload = harness.channel.open_reply(counter, reply)
    except RemoteRefusal as exc:
        return exc.reason
    if payload == protocol.Ok().to_wire():
        return "ok"
    return payload["error"]["reason"] if isinstance(payload, dict) and "error" in payload else payload


def test_returns_handed_together_are_stored_at_once_and_answered_each(harness: Harness) -> None:
    jobs = harness.worker.ctx.jobs
    jids = [f"2026112700000000000{n}" for n in range(4)]
    for jid in jids:
        assert jobs.add_job(jid, "test.ping", [], MINION, "glob", "root", [MINION])
    calls: list[list[ReturnRow]] = []
    real = jobs.add_returns

    def counting(rows: list[ReturnRow]) -> list[bool]:
        calls.append(list(rows))
        return real(rows)

    jobs.add_returns = counting  # type: ignore[method-assign]
    payloads = [_return(jids[0]), _return(jids[1], {"n": 1}), _return(jids[0], "again"),
                {"cmd": "_heartbeat", "id": MINION}, _return(jids[2]),
                None,   # a clear request: handled after the returns before it are stored
                _return("20261127000000000099"), _return(jids[3])]
    clear = codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "nonsense"})
    sealed = [harness.channel.seal_request(p) if p is not None else (None, clear) for p in payloads]
    served = harness.worker.serve_many([("127.0.0.1", body) for _, body in sealed])

    assert len(served) == len(payloads)
    outcomes = [_outcome(harness, counter, reply) if counter is not None else None
                for (counter, _), (reply, _) in zip(sealed, served, strict=True)]
    assert outcomes[:3] == ["ok", "ok", "duplicate"], outcomes
    assert isinstance(outcomes[3], dict) and "error" not in outcomes[3], outcomes   # the heartbeat's answer
    assert outcomes[4:] == ["ok", None, "unknown_job", "ok"], outcomes
    assert codec.unpack_envelope(served[5][0]).load["error"]["reason"] == "unknown_command"
    assert all(meta for i, (_, meta) in enumerate(served) if i != 5) and served[5][1] == b""
    # a heartbeat reads no returns: the returns on both sides of it went in one call; the clear
    # request (which might) came after them, and the return after it in another call
    assert [[(r.jid, r.ret) for r in rows] for rows in calls] == [
        [(jids[0], True), (jids[1], {"n": 1}), (jids[0], "again"), (jids[2], True)], [(jids[3], True)]]
    assert {jid: jobs.returns(jid)[MINION]["return"] for jid in jids} == {
        jids[0]: True, jids[1]: {"n": 1}, jids[2]: True, jids[3]: True}


def test_a_job_cache_failure_is_each_returns_refusal_and_the_worker_goes_on(harness: Harness) -> None:
    jobs = harness.worker.ctx.jobs
    jid = "20261127000000000010"
    assert jobs.add_job(jid, "test.ping", [], MINION, "glob", "root", [MINION])

    def broken(rows: list[ReturnRow]) -> list[bool]:
        raise RuntimeError("a bug in a store")

    real = jobs.add_returns
    jobs.add_returns = broken  # type: ignore[method-assign]
    sealed = [harness.channel.seal_request(_return(jid)) for _ in range(2)]
    served = harness.worker.serve_many([("127.0.0.1", body) for _, body in sealed])
    assert [_outcome(harness, c, reply) for (c, _), (reply, _) in zip(sealed, served, strict=True)] == [
        "internal_error", "internal_error"]
    jobs.add_returns = real  # type: ignore[method-assign]
    counter, body = harness.channel.seal_request(_return(jid))
    assert _outcome(harness, counter, harness.worker.serve("127.0.0.1", body)[0]) == "ok"
