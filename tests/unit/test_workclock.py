"""runtime.workclock: a worker's time on its requests less its waits for a CPU, and its wire form."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from runtime.transport import decode_work, encode_work
from runtime.workclock import SCHEDSTAT, WorkClock


def write_schedstat(path: Path, waited_ns: int) -> None:
    path.write_text(f"123456 {waited_ns} 7\n")


def test_time_spent_waiting_for_a_cpu_is_not_work(tmp_path: Path) -> None:
    stat = tmp_path / "schedstat"
    write_schedstat(stat, 1_000_000)
    clock = WorkClock(str(stat))
    start = clock.stamp()
    time.sleep(0.05)
    write_schedstat(stat, 1_000_000 + 40_000_000)     # 40 ms of the 50 ms runnable, not running
    work = clock.work_since(start)
    clock.close()
    assert 0.005 <= work <= 0.04, work


def test_a_wait_longer_than_the_wall_time_counts_as_no_work(tmp_path: Path) -> None:
    stat = tmp_path / "schedstat"
    write_schedstat(stat, 0)
    clock = WorkClock(str(stat))
    start = clock.stamp()
    write_schedstat(stat, 10**12)
    assert clock.work_since(start) == 0.0
    clock.close()


@pytest.mark.parametrize("content", [None, "garbage", ""])
def test_without_a_readable_counter_the_work_is_the_wall_time(tmp_path: Path, content: str | None) -> None:
    stat = tmp_path / "schedstat"
    if content is not None:
        stat.write_text(content)
    clock = WorkClock(str(stat))
    start = clock.stamp()
    time.sleep(0.03)
    assert 0.03 <= clock.work_since(start) < 1.0
    clock.close()


def test_each_thread_reads_its_own_counter(tmp_path: Path) -> None:
    """The file is opened again by another thread (thread-self names the opening thread)."""
    clock = WorkClock(str(tmp_path / "missing"))
    clock.stamp()
    first = clock._thread
    seen: list[int | None] = []
    worker = threading.Thread(target=lambda: (clock.stamp(), seen.append(clock._thread)))
    worker.start()
    worker.join(5)
    assert seen and seen[0] != first
    clock.close()


@pytest.mark.skipif(not os.path.exists(SCHEDSTAT), reason="no per-thread schedstat on this kernel")
def test_on_this_kernel_cpu_time_is_work() -> None:
    clock = WorkClock()
    start, cpu = clock.stamp(), time.thread_time()
    total = 0
    for n in range(300_000):
        total += n
    time.sleep(0.02)
    work, spent = clock.work_since(start), time.thread_time() - cpu
    clock.close()
    assert work >= spent * 0.9 + 0.02 * 0.9, (work, spent)


def test_the_work_frame_round_trips_in_microseconds() -> None:
    assert decode_work(encode_work(0.0123456)) == pytest.approx(0.012346)
    assert decode_work(encode_work(-1.0)) == 0.0
    assert decode_work(encode_work(10**9)) == 0xFFFFFFFF / 1e6
    assert decode_work(b"") is None
    assert decode_work(b"\x00" * 8) is None
