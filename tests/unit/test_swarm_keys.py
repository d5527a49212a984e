"""`saltpan swarm`'s simulated minions save their keys without fsync (three per minion stalled the
swarm's event loop at each first launch) and trust their master's key through one file for the
swarm; a real minion's keys stay durable, in its own pki_dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zmq.asyncio

from runtime.crypt.identity import load_or_create_identity
from runtime.crypt.trust import MasterTrust
from runtime.minion.daemon import Minion
from runtime.minion.swarm import build_minions


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_a_minions_keys_are_durable(tmp_path: Path, fsyncs: list[int]) -> None:
    load_or_create_identity(str(tmp_path / "pki"), "minion")
    MasterTrust(str(tmp_path / "pki")).remember(os.urandom(32))
    assert len(fsyncs) == 3
    assert sorted(p.name for p in (tmp_path / "pki").iterdir()) == ["minion.pem", "minion.pub", "minion_master.pub"]


def test_swarm_minions_save_their_keys_without_fsync(tmp_path: Path, fsyncs: list[int]) -> None:
    ctx = zmq.asyncio.Context()
    try:
        minions = build_minions({"root_dir": str(tmp_path), "master": "127.0.0.1"}, range(3), "k-", ctx,
                                executor=None)  # type: ignore[arg-type]   # no job runs here
        assert [m.id for m in minions] == ["k-0000", "k-0001", "k-0002"]
        for minion in minions:
            minion.trust.remember(b"\x01" * 32)
    finally:
        ctx.term()
    assert fsyncs == []
    for name in ("k-0000", "k-0002"):
        pki = tmp_path / "swarm" / name / "pki"
        assert sorted(p.name for p in pki.iterdir()) == ["minion.pem", "minion.pub"]
    # one master key trusted by the whole swarm, written once beside its minions' directories
    assert len({id(m.trust) for m in minions}) == 1
    assert (tmp_path / "swarm" / "minion_master.pub").is_file()
    again, created = load_or_create_identity(str(tmp_path / "swarm" / "k-0001" / "pki"), "minion")
    assert not created and again.public_raw == minions[1].identity.public_raw
    assert isinstance(minions[0], Minion)
