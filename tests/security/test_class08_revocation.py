"""Class 8: rejected, pending or deleted keys still getting jobs or decrypting publications
(CVE-2016-9639: Salt kept the AES key of a deleted minion valid until a restart).

Deleting or rejecting a key drops the minion's sessions at once and starts a new publish key
epoch before the next publication; a pending or rejected minion never receives a publish key;
a new key for a known id is never silently accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.crypt.errors import NeedPublishKey, PublicationRefused
from runtime.crypt.identity import Identity
from tests.integration.cluster import wait_for
from tests.integration.rogue import Rogue
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import ACCEPTED, PENDING, PROBE, REJECTED, ROGUE, VICTIM, Lab, wait_return


def test_pending_and_rejected_minions_never_get_jobs(lab: Lab) -> None:
    before = lab.keys()
    assert PENDING in before["minions_pre"] and REJECTED in before["minions_rejected"]
    pki = Path(lab.opts["pki_dir"]).relative_to(lab.base)
    # the one key store write: the pending id's impostor key, recorded as denied (as Salt does)
    with lab_attack(lab, logs=[(REJECTED, r"master answered rejected"),
                               ("master", r"auth from 'rej01' key .*: rejected")],
                    keys_change=True, allowed_writes=[f"{pki}/minions_denied", f"{pki}/minions_denied/{PENDING}"]) \
            as atk:
        published = atk.record("publish", _publish_all(lab, atk))
        assert sorted(published["minions"]) == sorted([*ACCEPTED, VICTIM, ROGUE, PROBE])
        for minion in (*ACCEPTED, VICTIM):
            assert wait_return(lab, published["jid"], minion)["return"] is True
        # the same ids with fresh keys: still rejected; a pending id with another key is denied
        for minion_id, outcome in ((REJECTED, "rejected"), (PENDING, "denied")):
            impostor = Rogue(minion_id, lab.cl.ret_port, lab.cl.publish_port)
            try:
                for _ in range(3):
                    result = impostor.auth()
                    assert (result.outcome, result.session, result.grant) == (outcome, None, None)
            finally:
                impostor.close()
        log = lab.cl.minions[REJECTED].log_path
        size = log.stat().st_size
        wait_for(lambda: "master answered rejected" in log.read_text()[size:], 10, what="rej01 retrying")
    denied = Path(lab.opts["pki_dir"]) / "minions_denied" / PENDING
    denied.unlink(missing_ok=True)   # the denied key recorded above (operator clean-up)
    assert lab.keys() == before


def _publish_all(lab: Lab, atk) -> dict:
    from runtime.client import LocalClient

    published = LocalClient(lab.opts).publish("*", "test.ping").to_wire()
    atk.allow_job(published["jid"])
    return published


@pytest.mark.parametrize("action", ["delete", "reject"])
def test_revoked_key_loses_session_and_publish_key(lab: Lab, action: str) -> None:
    minion_id = f"revoked-{action}"
    rogue = Rogue(minion_id, lab.cl.ret_port, lab.cl.publish_port, Identity.generate())
    try:
        with lab_attack(lab, keys_change=True,
                        logs=[("master", r"refused sealed request from [0-9.]+ \(unknown_session\)")]) as atk:
            assert rogue.auth().outcome == "pending"
            assert lab.cl.key("-a", minion_id, "-y").returncode == 0
            assert rogue.auth().outcome == "accepted"
            old = rogue.receiver()
            assert rogue.request({"cmd": "_heartbeat", "epoch": old.epoch})["epoch"] == old.epoch
            flag = ["-d", minion_id] if action == "delete" else ["-r", minion_id, "--include-accepted"]
            assert lab.cl.key(*flag, "-y").returncode == 0
            # the session is gone at once, for every request
            for payload in ({"cmd": "_heartbeat", "epoch": old.epoch}, {"cmd": "_publish_key"},
                            {"cmd": "_pillar"}):
                counter, body = rogue.sealed(payload)
                assert reason(atk.raw().decode(atk.raw().request(body))) == "unknown_session"
            # the next publication is under a key the revoked minion never had
            atk.sniffed(0.2)    # (drop what was published before the revocation)
            assert atk.ping("web01")
            sniffed = atk.sniffed(0.5)
            assert sniffed
            for body in sniffed:
                with pytest.raises(PublicationRefused) as refused:
                    old.open(body)
                assert isinstance(refused.value, NeedPublishKey)
            # and it cannot come back with the same key
            again = rogue.auth()
            assert again.outcome == ("pending" if action == "delete" else "rejected")
            assert again.grant is None
    finally:
        rogue.close()
        lab.cl.key("-d", minion_id, "-y")
