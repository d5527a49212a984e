"""Issue 6: Salt's pillar and grains refresh rules through a real master and real minions.

Seed 002: the minion keeps its pillar in memory; ``pillar.raw``/``pillar.get`` read it,
``pillar.items`` compiles fresh without replacing it, ``saltutil.refresh_pillar`` replaces it;
pillar targeting on the minion matches the in-memory pillar while the master's expected-minion
list uses the pillar it last compiled for each minion.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster

IDS = ["web01", "web02", "db01"]


def write(path: Path, text: str) -> None:
    """Write and move mtime forward, so no cache keyed by mtime can miss the change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.stat().st_mtime if path.exists() else 0
    path.write_text(text)
    stamp = max(old + 2, path.stat().st_mtime)
    os.utime(path, (stamp, stamp))


def set_tier(base: Path, web01_tier: str) -> None:
    write(base / "pillar" / "common.sls",
          "tier: {{ 'WEB01' if grains['id'] == 'web01' else 'blue' }}\n".replace("WEB01", web01_tier)
          + "rack_seen: {{ grains.get('rack', 'none') }}\n")


def set_rack(base: Path, minion_id: str, rack: str) -> None:
    write(base / f"grains-{minion_id}.yaml", f"rack: {rack}\n")


@pytest.fixture(scope="module")
def pcluster(tmp_path_factory: pytest.TempPathFactory, master_store: dict[str, Any]) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("pillar-refresh")
    write(base / "pillar" / "top.sls", "base:\n  '*':\n    - common\n")
    set_tier(base, "blue")
    write(base / "states" / "top.sls", "base: {}\n")
    cl = Cluster(base, master_opts=master_store)
    for minion_id in IDS:
        set_rack(base, minion_id, "r1")
        # db01 runs its jobs in forked processes: refreshes must still reach its event loop.
        cl.add_minion(minion_id, {"role": "db" if minion_id == "db01" else "web"},
                      grains_file=str(base / f"grains-{minion_id}.yaml"), multiprocessing=minion_id == "db01")
    with cl.running():
        yield cl


def refresh_all(cl: Cluster) -> None:
    assert cl.run_json("*", "saltutil.refresh_pillar", "--timeout", "20", timeout=60) == {m: True for m in IDS}


def pinged(cl: Cluster, *tgt: str) -> set[str]:
    return {m for m, ret in cl.run_json(*tgt, "test.ping", "--timeout", "3").items() if ret is True}


def test_refresh_rules_and_pillar_targeting(pcluster: Cluster) -> None:
    cl = pcluster
    refresh_all(cl)
    set_tier(cl.base, "green")

    # The in-memory pillar is what pillar.raw and pillar.get read: unchanged.
    assert cl.run_json("*", "pillar.raw", "tier") == {m: "blue" for m in IDS}
    assert cl.run_json("*", "pillar.get", "tier") == {m: "blue" for m in IDS}
    # Minions match their in-memory pillar, the master its last compiled one: both still blue.
    assert pinged(cl, "-I", "tier:blue") == set(IDS)

    # pillar.items compiles fresh and shows the change, without replacing the in-memory pillar.
    items = cl.run_json("*", "pillar.items")
    assert {m: p["tier"] for m, p in items.items()} == {"web01": "green", "web02": "blue", "db01": "blue"}
    assert cl.run_json("*", "pillar.raw", "tier") == {m: "blue" for m in IDS}

    # pillar.items made the master cache web01's new pillar: it expects web01 for tier:green,
    # but web01 still matches its in-memory pillar (blue) and stays silent.
    proc = cl.run("-I", "tier:green", "test.ping", "--timeout", "2", timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "web01" in proc.stderr and "did not return" in proc.stderr
    assert "True" not in proc.stdout

    # After saltutil.refresh_pillar the in-memory pillar shows it and -I selects by the new value.
    refresh_all(cl)
    assert cl.run_json("*", "pillar.raw", "tier") == {"web01": "green", "web02": "blue", "db01": "blue"}
    assert cl.run_json("*", "pillar.get", "tier") == {"web01": "green", "web02": "blue", "db01": "blue"}
    assert pinged(cl, "-I", "tier:green") == {"web01"}
    assert pinged(cl, "-I", "tier:blue") == {"web02", "db01"}
    assert pinged(cl, "-I", "tier:gr*") == {"web01"}
    assert pinged(cl, "-C", "I@tier:blue and web*") == {"web02"}
    assert pinged(cl, "-C", "J@tier:^(green|blue)$ and not G@role:db") == {"web01", "web02"}
    assert pinged(cl, "-C", "I@tier:green or I@tier:nosuch") == {"web01"}
    proc = cl.run("-I", "tier:purple", "test.ping")
    assert proc.returncode == 2 and "No minions matched the target" in proc.stderr

    # Changing it back: the same dance in reverse.
    set_tier(cl.base, "blue")
    assert pinged(cl, "-I", "tier:green") == {"web01"}
    refresh_all(cl)
    assert pinged(cl, "-I", "tier:blue") == set(IDS)


def test_pillar_refresh_wait_false_fires_and_returns(pcluster: Cluster) -> None:
    cl = pcluster
    set_tier(cl.base, "amber")
    assert cl.run_json("web01", "saltutil.refresh_pillar", "wait=False") == {"web01": True}
    from tests.integration.cluster import wait_for

    wait_for(lambda: cl.run_json("web01", "pillar.raw", "tier") == {"web01": "amber"}, 15, interval=0.3,
             what="web01's in-memory pillar after an asynchronous refresh")
    set_tier(cl.base, "blue")
    refresh_all(cl)


def test_refresh_grains_and_grain_targeting(pcluster: Cluster) -> None:
    cl = pcluster
    set_rack(cl.base, "web02", "r9")
    # Nothing reads the grains file again before a refresh.
    assert cl.run_json("web02", "grains.get", "rack") == {"web02": "r1"}
    proc = cl.run("-G", "rack:r9", "test.ping")
    assert proc.returncode == 2 and "No minions matched the target" in proc.stderr

    assert cl.run_json("web02", "saltutil.refresh_grains", "--timeout", "20", timeout=60) == {"web02": True}
    assert cl.run_json("web02", "grains.get", "rack") == {"web02": "r9"}
    assert pinged(cl, "-G", "rack:r9") == {"web02"}
    assert pinged(cl, "-G", "rack:r1") == {"web01", "db01"}
    assert pinged(cl, "-C", "G@rack:r9 or I@tier:nosuch") == {"web02"}
    # As in Salt, refresh_grains refreshes the pillar too (it may depend on grains).
    assert cl.run_json("web02", "pillar.raw", "rack_seen") == {"web02": "r9"}

    set_rack(cl.base, "web02", "r1")
    assert cl.run_json("web02", "saltutil.refresh_grains", "refresh_pillar=False") == {"web02": True}
    assert pinged(cl, "-G", "rack:r1") == set(IDS)
    assert cl.run_json("web02", "pillar.raw", "rack_seen") == {"web02": "r9"}
    refresh_all(cl)
    assert cl.run_json("web02", "pillar.raw", "rack_seen") == {"web02": "r1"}


def test_state_run_uses_fresh_pillar_and_leaves_memory(pcluster: Cluster) -> None:
    """state.apply compiles with fresh pillar (seed 002) but does not replace the in-memory one."""
    cl = pcluster
    write(cl.base / "states" / "show.sls", "show_tier:\n  test.succeed_without_changes:\n"
                                           "    - name: tier={{ pillar['tier'] }}\n")
    set_tier(cl.base, "violet")
    ret = cl.run_json("web01", "state.apply", "show", "--timeout", "30", timeout=90)["web01"]
    assert [r["name"] for r in ret.values()] == ["tier=violet"]
    assert cl.run_json("web01", "pillar.raw", "tier") == {"web01": "blue"}
    set_tier(cl.base, "blue")
