"""`saltpan swarm` splits into processes when one cannot hold every minion's sockets."""

from __future__ import annotations

from runtime.minion.swarm import FDS_PER_MINION, FDS_SPARE, slices


def test_one_process_when_the_limit_allows() -> None:
    assert slices(1000, 20_000) == [range(0, 1000)]


def test_ten_thousand_under_twenty_thousand_files() -> None:
    parts = slices(10_000, 20_000)
    assert len(parts) == 3
    assert [i for part in parts for i in part] == list(range(10_000))   # every id once, in order
    assert all(len(part) * FDS_PER_MINION + FDS_SPARE <= 20_000 for part in parts)


def test_tiny_limit_still_runs_everyone() -> None:
    parts = slices(7, FDS_SPARE + FDS_PER_MINION * 2)
    assert [len(p) for p in parts] == [2, 2, 2, 1]
