"""``minion_start`` and ``salt/minion/<id>/start`` reach the master once, even when the master is
too busy to answer the request that carries them: the next session sends them (issue 21, bench
cluster.py at 1,000 minions: 32 minions whose first session timed out on that request never fired
it, and the storm's watcher waited for them until its timeout)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runtime import protocol
from runtime.crypt.identity import Identity
from runtime.minion.daemon import Minion
from runtime.minion.session import SessionError
from runtime.transport import RequestTimeout


class Master:
    """Stands for a session's request channel: answers the pillar, records what it takes, and lets
    ``time_out`` (a message class) time out once."""

    def __init__(self, time_out: type | None = None) -> None:
        self.taken: list[Any] = []
        self.time_out = time_out

    async def request(self, message: Any, timeout: float | None = None, tries: int | None = None) -> Any:
        if self.time_out is not None and isinstance(message, self.time_out):
            self.time_out = None
            raise RequestTimeout("no reply from tcp://127.0.0.2:4506 after 2 tries of 10 s")
        self.taken.append(message)
        if isinstance(message, protocol.PillarRequest):
            return protocol.PillarReply(pillar={"role": "web"})
        return None


@pytest.fixture
def minion(tmp_path: Path) -> Minion:
    opts = {"id": "st1", "pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"),
            "refusal_log_interval": 60}
    return Minion(opts, identity=Identity.generate(), grains={"id": "st1"}, quiet=True)


def start_tags(master: Master) -> list[str]:
    return [e.tag for m in master.taken if isinstance(m, protocol.MinionEvents) for e in m.events]


def test_start_events_timed_out_go_with_the_next_session(minion: Minion) -> None:
    busy, later = Master(time_out=protocol.MinionEvents), Master()
    with pytest.raises(RequestTimeout):
        asyncio.run(minion.on_registered(busy))  # type: ignore[arg-type]
    assert minion.pillar == {"role": "web"} and start_tags(busy) == []
    asyncio.run(minion.on_registered(later))  # type: ignore[arg-type]
    assert start_tags(later) == ["minion_start", "salt/minion/st1/start"]
    # a rebuilt session sends the grains, not a pillar request (no compile storm after a restart)
    assert [type(m).__name__ for m in later.taken] == ["GrainsUpload", "MinionEvents"]


def test_start_events_are_fired_once(minion: Minion) -> None:
    first, second = Master(), Master()
    asyncio.run(minion.on_registered(first))  # type: ignore[arg-type]
    asyncio.run(minion.on_registered(second))  # type: ignore[arg-type]
    assert start_tags(first) == ["minion_start", "salt/minion/st1/start"]
    assert start_tags(second) == []


def test_a_master_silent_at_registration_ends_the_session_as_a_session_error(minion: Minion) -> None:
    session = SimpleNamespace(grant=SimpleNamespace(publish_epoch=1, publish_key=b"k" * 32),
                              result=SimpleNamespace(master_now_ms=0, master_pub=b"", clock_offset_ms=0),
                              request=Master(time_out=protocol.PillarRequest).request)
    watch = SimpleNamespace(address="tcp://127.0.0.2:4505")
    with pytest.raises(SessionError, match="did not answer the session's first requests"):
        asyncio.run(minion.run_session(session, asyncio.Event(), watch))  # type: ignore[arg-type]
