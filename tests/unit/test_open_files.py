"""The master's open-files limit (runtime/master/daemon.py): raised to Salt's ``max_open_files`` at
start, at most to the hard limit, and the request port's connection bound fits what it leaves."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from runtime.config import defaults
from runtime.master.daemon import connection_limits, raise_open_files


@pytest.fixture
def limits() -> Iterator[tuple[int, int]]:
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft, hard = saved
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the hard open-files limit ({hard}) leaves no room to raise the soft one")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        yield 1024, hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def test_the_soft_limit_is_raised_to_max_open_files(limits: tuple[int, int]) -> None:
    opts = defaults("master") | {"max_open_files": 2048}
    assert raise_open_files(opts) == 2048
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (2048, limits[1])
    assert connection_limits(opts).max_connections == 2048 - 256


def test_max_open_files_over_the_hard_limit_stops_at_it(limits: tuple[int, int]) -> None:
    _, hard = limits
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard open-files limit")
    opts = defaults("master") | {"max_open_files": hard + 1000}
    assert raise_open_files(opts) == hard
    assert connection_limits(opts).max_connections == min(100_000, hard - 256)


def test_a_soft_limit_already_above_it_is_kept(limits: tuple[int, int]) -> None:
    opts = defaults("master") | {"max_open_files": 512}
    assert raise_open_files(opts) == 1024
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 1024


def test_the_default_bound_holds_a_fleet_of_ten_thousand_and_its_clients() -> None:
    opts = defaults("master")
    assert opts["max_open_files"] == 100_000 and opts["max_connections"] == 100_000
