"""The minion's own target check of a publication (class 10, the minion side): a job published
by a publisher_acl user names the minions the master checked the ACL for, and no other minion
runs it, whatever its own nodegroups, grains or pillar say."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.crypt.identity import Identity
from runtime.minion.daemon import Minion


@pytest.fixture
def minion(tmp_path: Path) -> Minion:
    opts = {"id": "db01", "pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"),
            "nodegroups": {"webs": "*"}, "refusal_log_interval": 60}
    return Minion(opts, identity=Identity.generate(), grains={"id": "db01", "role": "db"}, quiet=True)


def job(**extra: object) -> dict:
    return {"jid": "20990101000000000001", "fun": "test.echo", "arg": ["x"], "user": "fred", **extra}


def test_own_view_of_the_target_is_not_enough(minion: Minion) -> None:
    assert minion.targeted(job(tgt="webs", tgt_type="nodegroup"))                  # the operator's job
    assert not minion.targeted(job(tgt="webs", tgt_type="nodegroup", acl_minions=["web01"]))
    assert not minion.targeted(job(tgt="*", tgt_type="glob", acl_minions=[]))
    assert not minion.targeted(job(tgt="*", tgt_type="glob", acl_minions="db01"))   # not a list
    assert minion.targeted(job(tgt="*", tgt_type="glob", acl_minions=["web01", "db01"]))
    assert not minion.targeted(job(tgt="G@role:web", tgt_type="compound", acl_minions=["db01"]))
