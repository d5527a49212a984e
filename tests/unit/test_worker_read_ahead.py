"""A worker handed several minions' ``_pillar`` requests together reads their stored grains and
pillar in one read (``MinionDataHandlers.read_ahead``), and answers and stores each as it would
alone; a minion with another request in the same batch, or a read that fails, falls back to the
request's own read."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime import codec
from runtime.crypt.channel import ClientChannel
from runtime.crypt.identity import Identity
from runtime.master.datacache import Snapshot
from runtime.master.store.errors import StoreUnavailable
from tests.security.test_fuzz import AcceptAll, Harness, finish_auth, start_auth


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    yield h
    h.close()


def _session(h: Harness, minion_id: str) -> ClientChannel:
    attempt = start_auth(Identity.generate(), minion_id)
    reply = h.worker.handle("127.0.0.1", codec.pack_envelope(codec.ENC_CLEAR, attempt.load))
    result = finish_auth(attempt, codec.unpack_envelope(reply).load, AcceptAll())
    assert result.outcome == "accepted" and result.session is not None, result
    return ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)


class Reads:
    """Counts the data cache's reads of the worker under test (and can make the batch read fail)."""

    def __init__(self, h: Harness, *, batch_fails: bool = False) -> None:
        data = h.worker.ctx.data
        self.batches: list[list[str]] = []
        self.singles: list[str] = []
        real_many = data.snapshots

        def snapshots(minions: Iterable[str], banks: Iterable[str]) -> dict[str, Snapshot]:
            self.batches.append(sorted(minions))
            if batch_fails:
                raise StoreUnavailable("the database is away")
            return real_many(minions, banks)

        def snapshot(minion: str, banks: Iterable[str]) -> Snapshot:
            self.singles.append(minion)
            return real_many((minion,), banks)[minion]

        data.snapshots = snapshots  # type: ignore[method-assign]
        data.snapshot = snapshot  # type: ignore[method-assign]


def _serve(h: Harness, asks: list[tuple[ClientChannel, dict[str, Any]]]) -> list[Any]:
    sealed = [(channel, *channel.seal_request(payload)) for channel, payload in asks]
    served = h.worker.serve_many([("127.0.0.1", body) for _, _, body in sealed])
    return [channel.open_reply(counter, reply) for (channel, counter, _), (reply, _) in zip(sealed, served, strict=True)]


def _pillar(minion_id: str, os_name: str) -> dict[str, Any]:
    return {"cmd": "_pillar", "id": minion_id, "grains": {"os": os_name}}


def test_pillar_requests_of_a_batch_read_the_store_once(harness: Harness) -> None:
    ids = ["ra1", "ra2", "ra3"]
    channels = {m: _session(harness, m) for m in ids}
    _serve(harness, [(channels["ra1"], _pillar("ra1", "Old"))])      # one stored entry to compare with
    reads = Reads(harness)
    replies = _serve(harness, [(channels[m], _pillar(m, f"OS-{m}")) for m in ids])
    assert [r["pillar"]["common"] for r in replies] == ["OS-ra1", "OS-ra2", "OS-ra3"]
    assert reads.batches == [ids] and reads.singles == []
    data = harness.worker.ctx.data
    assert {m: data.fetch(m, "grains")["os"] for m in ids} == {m: f"OS-{m}" for m in ids}
    assert {m: data.fetch(m, "pillar") for m in ids} == {m: {"common": f"OS-{m}"} for m in ids}
    # the same grains again: compared with what the batch read, nothing is written again
    before = {m: data.updated(m, "grains") for m in ids}
    reads = Reads(harness)
    _serve(harness, [(channels[m], _pillar(m, f"OS-{m}")) for m in ids])
    assert reads.batches == [ids] and reads.singles == []
    assert {m: data.updated(m, "grains") for m in ids} == before


def test_a_minion_with_two_requests_in_the_batch_reads_its_own(harness: Harness) -> None:
    channels = {m: _session(harness, m) for m in ("rb1", "rb2", "rb3")}
    reads = Reads(harness)
    replies = _serve(harness, [(channels["rb1"], _pillar("rb1", "A")), (channels["rb2"], _pillar("rb2", "B")),
                               (channels["rb3"], {"cmd": "_grains", "id": "rb3", "grains": {"os": "C0"}}),
                               (channels["rb3"], _pillar("rb3", "C"))])
    assert [r["pillar"]["common"] for r in (replies[0], replies[1], replies[3])] == ["A", "B", "C"]
    assert reads.batches == [["rb1", "rb2"]] and reads.singles == ["rb3"]
    assert harness.worker.ctx.data.fetch("rb3", "grains")["os"] == "C"


def test_one_pillar_request_or_a_failed_batch_read_reads_per_request(harness: Harness) -> None:
    channels = {m: _session(harness, m) for m in ("rc1", "rc2")}
    reads = Reads(harness)
    assert _serve(harness, [(channels["rc1"], _pillar("rc1", "A"))])[0]["pillar"] == {"common": "A"}
    assert reads.batches == [] and reads.singles == ["rc1"]
    reads = Reads(harness, batch_fails=True)
    replies = _serve(harness, [(channels[m], _pillar(m, m.upper())) for m in ("rc1", "rc2")])
    assert [r["pillar"] for r in replies] == [{"common": "RC1"}, {"common": "RC2"}]
    assert reads.batches == [["rc1", "rc2"]] and reads.singles == ["rc1", "rc2"]
