"""The cluster relay's copy of its bus to the shared event log: an event alone goes at once, and
events fired within FLUSH_GAP_S of a copy go together in the next one."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from runtime.master.cluster import FLUSH_GAP_S, Relay, _flusher
from runtime.master.store.errors import StoreError, StoreUnavailable
from runtime.ratelog import RateLimitedLog


class RecordingLog:
    """The part of a ChangeLog the flusher writes to: when each batch arrived, and its tags."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, list[str]]] = []
        self.arrived = threading.Event()

    def latest(self) -> int:
        return 0

    def latest_event(self) -> int:
        return 0

    def record_events(self, master_id: str, events: list[tuple[str, bytes]]) -> None:
        self.batches.append((time.monotonic(), [tag for tag, _ in events]))
        self.arrived.set()


def relay_with(changes: RecordingLog) -> Relay:
    return Relay({"id": "master-a"}, None, changes, None, None, None)  # type: ignore[arg-type]


def wait_batches(changes: RecordingLog, count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(changes.batches) < count and time.monotonic() < deadline:
        time.sleep(0.002)
    assert len(changes.batches) >= count, changes.batches


def test_a_lone_event_goes_at_once_and_a_burst_goes_in_one_batch() -> None:
    changes = RecordingLog()
    relay = relay_with(changes)
    stop = threading.Event()
    thread = threading.Thread(target=_flusher, args=(relay, stop, RateLimitedLog(logging.getLogger("t"), 60.0)),
                              daemon=True)
    thread.start()
    try:
        fired = time.monotonic()
        relay.observe(b"salt/auth", b"\x80")
        wait_batches(changes, 1)
        first_at, first = changes.batches[0]
        assert first == ["salt/auth"] and first_at - fired < FLUSH_GAP_S     # not held back
        burst = [f"salt/job/1/ret/m{i}".encode() for i in range(5)]
        for tag in burst:                                                    # right after that copy
            relay.observe(tag, b"\x80")
        wait_batches(changes, 2)
        second_at, second = changes.batches[1]
        assert second == [t.decode() for t in burst]                        # together, in order
        assert second_at - first_at >= FLUSH_GAP_S * 0.9                    # after the gap
        time.sleep(FLUSH_GAP_S * 3)
        assert len(changes.batches) == 2 and not relay.pending.is_set()     # nothing left, nothing resent
        relay.observe(b"salt/key", b"\x80")                                  # long after: at once again
        again = time.monotonic()
        wait_batches(changes, 3)
        assert changes.batches[2][1] == ["salt/key"] and changes.batches[2][0] - again < FLUSH_GAP_S
    finally:
        stop.set()
        thread.join(2.0)
    assert not thread.is_alive()


class RefusingLog(RecordingLog):
    """A database that refuses any batch holding a tag with "bad" in it (as PostgreSQL refuses a
    statement for what it holds), and is away while ``away`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.away = False

    def record_events(self, master_id: str, events: list[tuple[str, bytes]]) -> None:
        if self.away:
            raise StoreUnavailable("PostgreSQL is unavailable")
        if any("bad" in tag for tag, _ in events):
            raise StoreError("payload string too long")
        super().record_events(master_id, events)


def test_events_the_database_refuses_do_not_hold_back_the_others(caplog: pytest.LogCaptureFixture) -> None:
    changes = RefusingLog()
    relay = relay_with(changes)
    for tag in (b"salt/auth", b"custom/bad", b"salt/key"):
        relay.observe(tag, b"\x80")
    with caplog.at_level(logging.WARNING, logger="saltpan.master.cluster"):
        assert relay.flush() == 3
    assert [tags for _, tags in changes.batches] == [["salt/auth"], ["salt/key"]]   # each alone, the bad one dropped
    assert "event custom/bad of this master's bus not shared" in caplog.text
    assert relay.flush() == 0 and not relay.pending.is_set()
    relay.observe(b"custom/bad", b"\x80")                      # alone: dropped at once
    assert relay.flush() == 1 and relay.flush() == 0
    changes.away = True                                          # the database away: kept, not dropped
    relay.observe(b"salt/auth", b"\x80")
    with pytest.raises(StoreUnavailable):
        relay.flush()
    changes.away = False
    assert relay.flush() == 1 and changes.batches[-1][1] == ["salt/auth"]
