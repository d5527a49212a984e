"""Class 7: forged or unsigned replies to a minion (CVE-2022-22934, CVE-2022-22935).

Salt minions accepted auth replies that were not signed by the master they knew, and pillar
data from whoever answered.  ``mitm01`` is restarted while the fake master answers its hellos
itself: with a complete reply signed by another master key, with the real master's public key
but a signature it cannot make, unsigned, or with the real master's earlier reply replayed.
The minion must refuse each, keep the master key it trusts, and never run a job or take data;
sealed replies replaced by clear loads (a forged pillar) are refused too.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.cluster import wait_for
from tests.security.fakemaster import FORGED_PILLAR
from tests.security.guard import Attack, lab_attack
from tests.security.lab import VICTIM, Lab, data_cache_writes, minion_opts, publish, wait_return

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

MODES = {
    "own_key": r"master presented key [0-9a-f:]+ but this minion trusts [0-9a-f:]+",
    "stolen_pub": r"auth reply signature does not verify",
    "unsigned": r"auth reply (has unexpected fields|refused: master refused the hello without signing)",
    "replay": r"auth reply (answers another hello|is bound to another hello)",
}


def restart_writes(lab: Lab) -> list[str]:
    """What restarting the victim legitimately writes: its pid file, and its grains in the
    master's data cache when it registers again."""
    return [*data_cache_writes(lab), f"{VICTIM}/var/run/*.pid", f"{VICTIM}/var/run"]


def victim_log(lab: Lab) -> Path:
    return lab.cl.minions[VICTIM].log_path


def authenticated_lines(lab: Lab) -> int:
    return victim_log(lab).read_text().count("authenticated with the master")


def restart_victim(lab: Lab) -> None:
    lab.cl.minions[VICTIM].stop()
    lab.cl.minions[VICTIM].start()


def back_to_relay(lab: Lab, atk: Attack) -> None:
    lab.fake.set_mode("relay")
    wait_for(lambda: atk.ping(VICTIM), 30, what=f"{VICTIM} answering again")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_forged_auth_replies(lab: Lab, mode: str) -> None:
    trust = Path(minion_opts(lab, VICTIM)["pki_dir"]) / "minion_master.pub"
    trusted = trust.read_bytes()
    with lab_attack(lab, logs=[(VICTIM, MODES[mode])], allowed_writes=restart_writes(lab)) as atk:
        lab.fake.set_mode(mode)
        hellos = lab.fake.hellos
        sessions = authenticated_lines(lab)
        restart_victim(lab)
        wait_for(lambda: lab.fake.hellos >= hellos + 3, 30, what=f"{VICTIM} retrying against the fake master")
        assert authenticated_lines(lab) == sessions, f"{VICTIM} authenticated with a forged reply"
        assert trust.read_bytes() == trusted
        back_to_relay(lab, atk)
    assert trust.read_bytes() == trusted
    assert "Trusting the master key" not in victim_log(lab).read_text().split("minion mitm01 starting")[-1]


def test_sealed_replies_replaced_by_clear_loads(lab: Lab) -> None:
    """The fake relays auth (clear) but replaces every sealed reply (heartbeat, pillar, return
    acknowledgements) by a clear load holding forged pillar data."""
    with lab_attack(lab, logs=[(VICTIM, r"a clear reply to an encrypted request")],
                    allowed_writes=data_cache_writes(lab)) as atk:
        lab.fake.set_mode("clear_replies")
        time.sleep(4)                               # heartbeats fail, sessions restart, pillar fetches fail
        assert lab.cl.minions[VICTIM].alive(), f"{VICTIM} died on a forged reply"
        back_to_relay(lab, atk)
        jid = atk.allow_job(publish(lab, [VICTIM], "pillar.get", ["forged"], tgt_type="list"))
        assert wait_return(lab, jid, VICTIM)["return"] == ""
        jid = atk.allow_job(publish(lab, [VICTIM], "pillar.get", ["common"], tgt_type="list"))
        assert wait_return(lab, jid, VICTIM)["return"] == "shared"
    assert FORGED_PILLAR["forged"] not in victim_log(lab).read_text()
