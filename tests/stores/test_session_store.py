"""The session store's contract with either master_store: sessions and replay windows (the
master's own), one-shot nonces (shared on PostgreSQL), revocation, restart, and which master
holds which minion."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from runtime.crypt.errors import ReplayRefused, UnknownSession
from runtime.crypt.handshake import SessionKeys, now_ms
from runtime.master.store import factory
from runtime.master.store.pg_sessions import REGISTRY_SEEN_STEP_MS
from tests.stores.conftest import in_processes, other_master


def session(minion_id: str) -> SessionKeys:
    return SessionKeys(os.urandom(16), minion_id, os.urandom(32), os.urandom(32), now_ms())


def test_sessions_windows_and_publish_keys(opts: dict[str, Any]) -> None:
    store = factory.open_session_store(opts)
    store.reset()
    keys = session("web1")
    pkey = store.open_session(keys)
    assert store.get_session(keys.sid) == keys and store.minion_sessions("web1") == [keys.sid]
    assert pkey == store.current_publish_key() == store.publish_key_for(keys.sid)
    now = now_ms()
    store.admit(keys.sid, 1, now, now)
    with pytest.raises(ReplayRefused):
        store.admit(keys.sid, 1, now, now)
    first, serial = store.next_publication()
    assert first == pkey and store.next_publication()[1] == serial + 1
    assert store.last_seen() == {"web1": now} and store.session_count() == 1
    assert store.drop_session(keys.sid) and store.get_session(keys.sid) is None
    with pytest.raises(UnknownSession):
        store.admit(keys.sid, 2, now, now)
    store.close()


def test_revoke_cuts_the_minion_off_and_rotates(opts: dict[str, Any]) -> None:
    store = factory.open_session_store(opts)
    store.reset()
    web, db = session("web1"), session("db1")
    old = store.open_session(web)
    store.open_session(db)
    new = store.revoke("web1", "key deleted")
    assert new.epoch > old.epoch and store.minion_sessions("web1") == []
    with pytest.raises(UnknownSession):
        store.publish_key_for(web.sid)
    assert store.publish_key_for(db.sid) == new
    assert "web1" not in store.holders() and "db1" in store.holders()
    store.close()


def test_a_nonce_is_claimed_once_until_it_expires(opts: dict[str, Any]) -> None:
    store = factory.open_session_store(opts)
    store.reset()
    nonce = os.urandom(32)
    assert store.claim_nonce("hello", nonce, now_ms() + 60_000)
    assert not store.claim_nonce("hello", nonce, now_ms() + 60_000)
    assert store.claim_nonce("client", nonce, now_ms() + 60_000)          # scopes are apart
    expired = os.urandom(32)
    assert store.claim_nonce("hello", expired, now_ms() - 1)
    assert store.claim_nonce("hello", expired, now_ms() + 60_000)         # an expired claim is no claim
    store.close()


def test_claimed_nonces_outlive_a_restart(opts: dict[str, Any]) -> None:
    store = factory.open_session_store(opts)
    store.reset()
    keys = session("web1")
    store.open_session(keys)
    nonce = os.urandom(32)
    assert store.claim_nonce("hello", nonce, now_ms() + 60_000)
    before = store.started_ms()
    store.close()
    restarted = factory.open_session_store(opts)
    restarted.reset(now=before + 1000)
    assert restarted.started_ms() == before + 1000
    assert restarted.get_session(keys.sid) is None and restarted.holders() == {}
    assert not restarted.claim_nonce("hello", nonce, now_ms() + 60_000)
    restarted.close()


def test_a_nonce_replayed_to_many_processes_and_masters_wins_once(opts: dict[str, Any], tmp_path: Path) -> None:
    nonce = os.urandom(32)
    for master in ("m0", "m1"):
        # closed before the processes fork: a SQLite connection open in the parent at fork time makes
        # the children's own connections to that file share its lock bookkeeping, so two of them could
        # both take the write lock (SQLite: never carry a connection across fork); the store left to the
        # garbage collector was open at fork time in some runs, and one master claimed the nonce twice
        store = factory.open_session_store(other_master(opts, tmp_path, master))
        store.reset()
        store.close()

    def claim(i: int) -> bool:
        store = factory.open_session_store(other_master(opts, tmp_path, f"m{i % 2}"))
        try:
            return store.claim_nonce("hello", nonce, now_ms() + 60_000)
        finally:
            store.close()

    results = in_processes(claim, 8)
    if opts.get("master_store") == "postgres":
        assert results.count(True) == 1              # one claim among all the masters
    else:
        assert results.count(True) == 2              # SQLite: one per master (each has its own sock_dir)


def test_holders_name_the_master_of_each_minion(opts: dict[str, Any], tmp_path: Path) -> None:
    a = factory.open_session_store(opts)
    b = factory.open_session_store(other_master(opts, tmp_path))
    a.reset()
    b.reset()
    web, db = session("web1"), session("db1")
    a.open_session(web)
    b.open_session(db)
    now = now_ms()
    b.admit(db.sid, 1, now, now)
    a.share_presence()
    b.share_presence()
    assert a.holders()["web1"][0] == "master-a"
    if opts.get("master_store") == "postgres":
        assert b.holders() == a.holders() and a.holders()["db1"] == ("master-b", now)
        # a heartbeat moves the registry's last_seen only once it is REGISTRY_SEEN_STEP_MS behind
        b.admit(db.sid, 2, now + 5_000, now + 5_000)
        b.share_presence(now + 5_000)
        assert a.holders()["db1"] == ("master-b", now)
        later = now + REGISTRY_SEEN_STEP_MS + 5_000
        b.admit(db.sid, 3, later, later)
        b.share_presence(later)
        assert a.holders()["db1"] == ("master-b", later)
        b.reset()                                    # master b restarts: only its own sessions go
        assert set(a.holders()) == {"web1"}
        b.open_session(db)
        a.revoke("db1", "key deleted")               # a revocation anywhere drops it everywhere
        assert "db1" not in b.holders()
        # ... and tells master b, which drops its own sessions of db1 (the cluster step listens)
        changes = factory.open_change_log(opts)
        assert [(c.topic, c.data["ids"]) for c in changes.since(0) if c.topic == "revoke"] == [("revoke", ["db1"])]
        changes.close()
    else:
        assert set(a.holders()) == {"web1"} and set(b.holders()) == {"db1"}
    a.close()
    b.close()


def test_presence_follows_expired_sessions(opts: dict[str, Any]) -> None:
    store = factory.open_session_store(opts)
    store.reset()
    keys = session("web1")
    store.open_session(keys)
    store.share_presence()
    assert set(store.holders()) == {"web1"}
    assert store.expire_idle(0, now=now_ms() + 10) == ["web1"]
    store.share_presence()
    assert store.holders() == {}
    store.close()
