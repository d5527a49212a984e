"""The minion data cache's contract, on SQLite and on PostgreSQL: banks (grains, pillar, mine)
per minion, the size bound, the revocation guard, and what other processes and masters see."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from runtime.master.datacache import DataTooLarge
from runtime.master.store import factory
from tests.stores.conftest import in_processes, other_master


def test_store_fetch_and_banks(opts: dict[str, Any]) -> None:
    data = factory.open_data_cache(opts)
    data.store("web1", "grains", {"os": "Debian", "id": "web1", "nums": [1, 2.5]})
    data.store("web1", "pillar", {"app": {"port": 8080}})
    data.store("db1", "grains", {"os": "RedHat"})
    data.store("web1", "mine", {"network.ip_addrs": ["10.0.0.1"]})   # the mine bank, by the same API
    assert data.fetch("web1", "grains") == {"os": "Debian", "id": "web1", "nums": [1, 2.5]}
    copy = data.fetch("web1", "pillar")
    copy["app"]["port"] = 1
    assert data.fetch("web1", "pillar") == {"app": {"port": 8080}}      # fetch gives a copy
    assert data.fetch("web1", "nothing") is None and data.fetch("nobody", "grains") is None
    assert data.minions() == ["db1", "web1"]
    assert data.all("grains") == {"web1": {"os": "Debian", "id": "web1", "nums": [1, 2.5]}, "db1": {"os": "RedHat"}}
    assert data.all("mine") == {"web1": {"network.ip_addrs": ["10.0.0.1"]}}
    updated = data.updated("web1", "pillar")
    assert updated is not None and data.updated("web1", "nothing") is None
    data.store("web1", "pillar", {"app": {"port": 9090}})
    assert data.updated("web1", "pillar") >= updated and data.all("pillar") == {"web1": {"app": {"port": 9090}}}
    data.flush("web1")
    assert data.minions() == ["db1"] and data.all("mine") == {} and data.fetch("web1", "grains") is None
    data.close()


def test_unless_same_writes_only_a_changed_entry(opts: dict[str, Any]) -> None:
    known = {"web1"}
    data = factory.open_data_cache(opts, still_known=lambda m: m in known)
    assert data.store("web1", "grains", {"os": "Debian", "id": "web1"}, unless_same=True) is True   # none yet
    first = data.updated("web1", "grains")
    assert data.store("web1", "grains", {"os": "Debian", "id": "web1"}, unless_same=True) is False
    assert data.updated("web1", "grains") == first                    # not written: updated stays
    assert data.store("web1", "grains", {"os": "Debian", "id": "web1"}) is True   # a plain store writes
    assert data.updated("web1", "grains") >= first
    assert data.store("web1", "grains", {"os": "Ubuntu", "id": "web1"}, unless_same=True) is True
    assert data.fetch("web1", "grains") == {"os": "Ubuntu", "id": "web1"}
    assert data.all("grains") == {"web1": {"os": "Ubuntu", "id": "web1"}}
    data.flush("web1")                                                 # flushed: the same value is new again
    assert data.store("web1", "grains", {"os": "Ubuntu", "id": "web1"}, unless_same=True) is True
    known.clear()                                                      # revoked meanwhile: undone as ever
    assert data.store("web1", "grains", {"os": "Debian", "id": "web1"}, unless_same=True) is True
    assert data.fetch("web1", "grains") is None
    data.close()


def test_snapshot_reads_banks_once_and_store_compares_with_it(opts: dict[str, Any]) -> None:
    data = factory.open_data_cache(opts)
    data.store("web1", "grains", {"os": "Debian"})
    data.store("web2", "pillar", {"role": "db"})
    known = data.snapshot("web1", ["grains", "pillar"])
    assert known.value("grains") == {"os": "Debian"} and known.value("pillar") is None
    assert known.updated("grains") == data.updated("web1", "grains") and known.updated("pillar") is None
    assert known.covers("web1", "pillar") and not known.covers("web1", "mine") and not known.covers("web2", "grains")
    # compared with the snapshot, not read again: an entry written since is not seen
    data.store("web1", "grains", {"os": "Ubuntu"})
    assert data.store("web1", "grains", {"os": "Debian"}, unless_same=True, known=known) is False
    assert data.fetch("web1", "grains") == {"os": "Ubuntu"}
    assert data.store("web1", "pillar", {"role": "web"}, unless_same=True, known=known) is True   # none in it
    # a bank or minion the snapshot does not cover is read as ever
    assert data.store("web2", "pillar", {"role": "db"}, unless_same=True, known=known) is False
    assert data.store("web1", "mine", {}, unless_same=True, known=known) is True
    value = known.value("grains")
    value["os"] = "changed"                                 # a fresh copy each time
    assert known.value("grains") == {"os": "Debian"}
    assert data.snapshot("nobody", ["grains"]).rows == {} and data.snapshot("web1", []).rows == {}
    data.close()


def test_view_reads_only_when_looked_into(opts: dict[str, Any]) -> None:
    data = factory.open_data_cache(opts)
    view = data.view("grains")
    data.store("web1", "grains", {"role": "web"})          # stored after the view was made
    assert dict(view) == {"web1": {"role": "web"}} and len(view) == 1 and view["web1"]["role"] == "web"
    data.close()


def test_max_size_refuses_and_drops_the_stale_entry(opts: dict[str, Any]) -> None:
    data = factory.open_data_cache(opts, max_size=100)
    data.store("web1", "grains", {"small": True})
    with pytest.raises(DataTooLarge) as raised:
        data.store("web1", "grains", {"big": "x" * 200})
    assert "max_minion_data_size" in raised.value.message and raised.value.reason == "too_large"
    assert data.fetch("web1", "grains") is None                 # no stale data acted upon
    data.close()


def test_a_refused_store_leaves_a_row_written_after_it(opts: dict[str, Any]) -> None:
    """The stale entry a too-large store drops is one written before it: a row another master
    wrote since (here: stamped an hour ahead) stays, and the same delete sent again (PostgreSQL's
    pooled connection found dead after the first send committed) removes nothing more."""
    data = factory.open_data_cache(opts, max_size=100)
    later = time.time() + 3600
    data._put("web1", "grains", '{"from": "another master"}', later)   # type: ignore[attr-defined]
    with pytest.raises(DataTooLarge):
        data.store("web1", "grains", {"big": "x" * 200})
    assert data.fetch("web1", "grains") == {"from": "another master"}
    data._delete("web1", "grains", later - 1, older_too=True)          # type: ignore[attr-defined]
    assert data.fetch("web1", "grains") == {"from": "another master"}
    data._delete("web1", "grains", later, older_too=True)              # type: ignore[attr-defined]
    assert data.fetch("web1", "grains") is None
    data.close()


def test_a_minion_revoked_meanwhile_leaves_nothing_behind(opts: dict[str, Any]) -> None:
    known = {"web1"}
    data = factory.open_data_cache(opts, still_known=lambda m: m in known)
    data.store("web1", "grains", {"v": 1})
    known.clear()
    data.store("web1", "grains", {"v": 2})
    assert data.fetch("web1", "grains") is None
    data.close()


def test_another_process_sees_each_change(opts: dict[str, Any], tmp_path: Path) -> None:
    """A second worker (or master) keeps a decoded copy; every change made elsewhere shows."""
    reader = factory.open_data_cache(opts)
    writer = factory.open_data_cache(other_master(opts, tmp_path))
    writer.store("web1", "grains", {"v": 1})
    assert reader.all("grains") == {"web1": {"v": 1}}
    writer.store("web1", "grains", {"v": 2})
    writer.store("db1", "grains", {"v": 3})
    assert reader.all("grains") == {"web1": {"v": 2}, "db1": {"v": 3}}
    writer.flush("web1")
    assert reader.all("grains") == {"db1": {"v": 3}}
    reader.close()
    writer.close()


def test_concurrent_writers_of_many_minions(opts: dict[str, Any], tmp_path: Path) -> None:
    def report(i: int) -> int:
        data = factory.open_data_cache(other_master(opts, tmp_path, f"m{i % 2}"))
        try:
            for n in range(25):
                data.store(f"m{i}-{n}", "grains", {"i": i, "n": n})
                data.store("shared", "grains", {"last": i})
            return 25
        finally:
            data.close()

    factory.check_store(opts)            # what the master does before it forks its workers
    assert sum(in_processes(report, 4)) == 100
    data = factory.open_data_cache(opts)
    grains = data.all("grains")
    assert len(grains) == 101 and grains["m3-24"] == {"i": 3, "n": 24} and grains["shared"]["last"] in range(4)
    data.close()
