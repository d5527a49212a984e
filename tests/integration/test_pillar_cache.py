"""Issue 6: the master's pillar_cache: a compiled pillar is served again for pillar_cache_ttl
seconds (pillar.items, state runs, a minion's start), saltutil.refresh_pillar compiles anew
(clean_cache=True, Salt's default), and after the TTL the next request compiles anew.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.integration.cluster import Cluster
from tests.integration.test_pillar_refresh import write

TTL = 6


def set_value(cl: Cluster, value: str) -> None:
    write(cl.base / "pillar" / "data.sls", f"value: {value}\n")


@pytest.fixture(scope="module")
def ccluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("pillar-cache")
    write(base / "pillar" / "top.sls", "base:\n  '*':\n    - data\n")
    write(base / "states" / "top.sls", "base: {}\n")
    write(base / "states" / "show.sls", "show:\n  test.succeed_without_changes:\n"
                                        "    - name: value={{ pillar['value'] }}\n")
    cl = Cluster(base, master_opts={"pillar_cache": True, "pillar_cache_ttl": TTL})
    set_value(cl, "one")
    cl.add_minion("m1")
    with cl.running():
        yield cl


def items(cl: Cluster) -> str:
    return cl.run_json("m1", "pillar.items")["m1"]["value"]


def raw(cl: Cluster) -> str:
    return cl.run_json("m1", "pillar.raw", "value")["m1"]


def applied(cl: Cluster) -> str:
    ret = cl.run_json("m1", "state.apply", "show", "--timeout", "30", timeout=60)["m1"]
    return next(iter(ret.values()))["name"].split("=", 1)[1]


def test_pillar_cache_ttl(ccluster: Cluster) -> None:
    cl = ccluster
    compiled = time.monotonic()
    assert cl.run_json("m1", "saltutil.refresh_pillar") == {"m1": True}
    assert raw(cl) == "one"

    set_value(cl, "two")
    # Within the TTL every request is answered from the cache ...
    assert items(cl) == "one"
    assert applied(cl) == "one"
    assert cl.run_json("m1", "saltutil.refresh_pillar", "clean_cache=False") == {"m1": True}
    assert raw(cl) == "one"
    assert time.monotonic() - compiled < TTL, "the machine is too slow for this TTL; the checks above are void"

    # ... except a refresh_pillar, which cleans it (Salt's default clean_cache=True).
    compiled = time.monotonic()
    assert cl.run_json("m1", "saltutil.refresh_pillar") == {"m1": True}
    assert raw(cl) == "two"
    # The master's targeting view is the cached pillar too.
    assert set(cl.run_json("-I", "value:two", "test.ping")) == {"m1"}

    set_value(cl, "three")
    assert items(cl) == "two"
    assert time.monotonic() - compiled < TTL, "the machine is too slow for this TTL; the checks above are void"

    # After the TTL the next request compiles anew (and caches that).
    time.sleep(max(0.0, TTL + 0.5 - (time.monotonic() - compiled)))
    assert items(cl) == "three"
    assert raw(cl) == "two"  # pillar.items never replaces the in-memory pillar
    set_value(cl, "four")
    assert applied(cl) == "three"
