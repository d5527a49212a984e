"""The cluster relay's copy of its bus to the shared event log: an event alone goes at once, and
events fired within FLUSH_GAP_S of a copy go together in the next one."""

from __future__ import annotations

import logging
import threading
import time

from runtime.master.cluster import FLUSH_GAP_S, Relay, _flusher
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
