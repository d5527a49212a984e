"""Identity leftovers (issue 16, item 7; SECURITY.md class 8).

After ``saltpan key -d`` and a new key under the same id, the new holder's first pillar was
compiled with the old holder's cached grains.  Whatever removes or replaces an accepted key now
drops its sessions, rotates the publish key and flushes the id's minion data cache (grains,
cached pillar, every other bank), and a store racing with the revocation is undone.

The lab's pillar for ids ``heir*`` is ``owner: {{ grains.get('owner', 'nobody') }}``: a new
holder asking for its pillar without sending grains must get ``nobody``.
"""

from __future__ import annotations

import threading
import time

import pytest

from runtime.crypt.errors import RemoteRefusal
from tests.integration.rogue import Rogue
from tests.security.guard import lab_attack
from tests.security.lab import HEIR_PREFIX, Lab, cached, data_cache_writes

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def holder(lab: Lab, minion_id: str, *, accept: bool = True) -> Rogue:
    """A new key for ``minion_id``, presented and (by the operator) accepted."""
    rogue = Rogue(minion_id, lab.cl.ret_port, lab.cl.publish_port)
    first = rogue.auth().outcome
    if accept:
        assert first == "pending", first
        assert lab.cl.key("-a", minion_id, "-y").returncode == 0
        assert rogue.auth().outcome == "accepted"
    return rogue


def first_pillar(rogue: Rogue) -> dict:
    return rogue.request({"cmd": "_pillar"})["pillar"]


def plant_grains(old: Rogue, owner: str = "old-holder") -> None:
    assert old.request({"cmd": "_grains", "grains": {"owner": owner, "os": "Evil"}}) == {"ok": True}
    assert first_pillar(old)["owner"] == owner


def assert_forgotten(lab: Lab, minion_id: str) -> None:
    for bank in ("grains", "pillar"):
        assert cached(lab, minion_id, bank) is None, f"{bank} of {minion_id} outlived its key"


def attack(lab: Lab):
    return lab_attack(lab, keys_change=True, allowed_writes=data_cache_writes(lab))


def test_deleted_key_then_new_key_under_the_same_id(lab: Lab) -> None:
    """The issue's instance: delete, a new key is accepted, its first pillar."""
    minion_id = f"{HEIR_PREFIX}01"
    old = holder(lab, minion_id)
    try:
        with attack(lab):
            plant_grains(old)
            assert lab.cl.key("-d", minion_id, "-y").returncode == 0
            assert_forgotten(lab, minion_id)
            with pytest.raises(RemoteRefusal):               # its session went with the key
                old.request({"cmd": "_heartbeat", "epoch": 0})
            new = holder(lab, minion_id)
            assert first_pillar(new)["owner"] == "nobody"
            new.close()
    finally:
        old.close()
        lab.cl.key("-d", minion_id, "-y")


def test_rejected_key_then_new_key(lab: Lab) -> None:
    """Rejected (from accepted), then the rejected key deleted and a new key accepted."""
    minion_id = f"{HEIR_PREFIX}02"
    old = holder(lab, minion_id)
    try:
        with attack(lab):
            plant_grains(old)
            assert lab.cl.key("-r", minion_id, "--include-accepted", "-y").returncode == 0
            assert_forgotten(lab, minion_id)
            assert old.auth().outcome == "rejected"
            assert lab.cl.key("-d", minion_id, "-y").returncode == 0
            new = holder(lab, minion_id)
            assert first_pillar(new)["owner"] == "nobody"
            new.close()
    finally:
        old.close()
        lab.cl.key("-d", minion_id, "-y")


def test_key_replaced_by_accepting_the_denied_one(lab: Lab) -> None:
    """A second key for an accepted id is denied; the operator accepts it (--include-denied),
    replacing the first: the first holder's session and data go."""
    minion_id = f"{HEIR_PREFIX}03"
    old = holder(lab, minion_id)
    try:
        with attack(lab):
            plant_grains(old)
            new = holder(lab, minion_id, accept=False)
            assert new.result.outcome == "denied"
            assert lab.cl.key("-a", minion_id, "--include-denied", "-y").returncode == 0
            assert_forgotten(lab, minion_id)
            with pytest.raises(RemoteRefusal):
                old.request({"cmd": "_pillar"})
            assert old.auth().outcome == "denied"          # its key is no longer the accepted one
            assert new.auth().outcome == "accepted"
            assert first_pillar(new)["owner"] == "nobody"
            new.close()
    finally:
        old.close()
        lab.cl.key("-d", minion_id, "-y")


def test_uploads_racing_with_the_deletion_leave_nothing(lab: Lab) -> None:
    """The old holder uploads grains and asks for its pillar in a tight loop from two threads
    while the operator deletes its key: whatever was in flight, nothing of it stays."""
    minion_id = f"{HEIR_PREFIX}04"
    old = holder(lab, minion_id)
    old2 = Rogue(minion_id, lab.cl.ret_port, lab.cl.publish_port, old.identity)
    assert old2.auth().outcome == "accepted"
    stop = threading.Event()
    sent = [0, 0]

    def upload(rogue: Rogue, slot: int) -> None:
        while not stop.is_set():
            try:
                rogue.request({"cmd": "_grains", "grains": {"owner": "old-holder", "n": sent[slot]}})
                rogue.request({"cmd": "_pillar", "grains": {"owner": "old-holder"}})
                sent[slot] += 1
            except Exception:  # noqa: BLE001 - refused once the key is gone: the point
                time.sleep(0.01)

    try:
        with attack(lab):
            threads = [threading.Thread(target=upload, args=(r, i)) for i, r in enumerate((old, old2))]
            for thread in threads:
                thread.start()
            time.sleep(1.0)
            assert lab.cl.key("-d", minion_id, "-y").returncode == 0
            time.sleep(1.0)
            stop.set()
            for thread in threads:
                thread.join(10)
            assert sum(sent) > 0
            assert_forgotten(lab, minion_id)
            new = holder(lab, minion_id)
            assert first_pillar(new)["owner"] == "nobody"
            new.close()
    finally:
        stop.set()
        old.close()
        old2.close()
        lab.cl.key("-d", minion_id, "-y")
