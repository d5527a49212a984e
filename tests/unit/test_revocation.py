"""What the master forgets when a key goes away: sessions, publish epoch, data cache (issue 16 item 7)."""

from __future__ import annotations

import os

from runtime.crypt.handshake import SessionKeys
from runtime.master import revocation
from runtime.master.store.sqlite_data import DB_NAME, SQLiteDataCache
from runtime.master.store.sqlite_sessions import SQLiteSessionStore


def _opts(tmp_path) -> dict:
    return {"sock_dir": str(tmp_path / "sock"), "cachedir": str(tmp_path / "cache")}


def _session(store: SQLiteSessionStore, minion_id: str) -> bytes:
    sid = os.urandom(16)
    store.open_session(SessionKeys(sid, minion_id, b"c" * 32, b"s" * 32, 1))
    return sid


def test_loses_identity():
    assert revocation.loses_identity("delete", {"minions_pre": ["a"], "minions": ["b"]}) == ["a", "b"]
    assert revocation.loses_identity("reject", {"minions": ["b"]}) == ["b"]
    assert revocation.loses_identity("accept", {"minions_pre": ["a"]}) == []          # nothing replaced
    assert revocation.loses_identity("accept", {"minions_denied": ["a"]}) == ["a"]    # a key replaced


def test_forget_drops_sessions_rotates_and_flushes_every_bank(tmp_path):
    opts = _opts(tmp_path)
    sessions = SQLiteSessionStore.in_sock_dir(opts["sock_dir"])
    data = SQLiteDataCache(opts["cachedir"])
    epoch = sessions.current_publish_key().epoch
    _session(sessions, "web1")
    _session(sessions, "db1")
    for bank in ("grains", "pillar", "mine"):
        data.store("web1", bank, {"x": 1})
        data.store("db1", bank, {"x": 2})
    revocation.forget_minions(opts, ["web1"], "key delete")
    assert sessions.minion_sessions("web1") == [] and len(sessions.minion_sessions("db1")) == 1
    assert sessions.current_publish_key().epoch == epoch + 1
    assert [data.fetch("web1", b) for b in ("grains", "pillar", "mine")] == [None, None, None]
    assert data.fetch("db1", "mine") == {"x": 2}


def test_forget_creates_no_store(tmp_path):
    opts = _opts(tmp_path)
    revocation.forget_minions(opts, ["web1"], "key delete")
    assert not os.path.exists(tmp_path / "sock") and not os.path.exists(tmp_path / "cache" / DB_NAME)


def test_a_store_after_the_revocation_is_undone(tmp_path):
    """A worker stores data for a request admitted before the key was deleted, after the flush:
    the cache removes it again because the minion has no session any more."""
    opts = _opts(tmp_path)
    sessions = SQLiteSessionStore.in_sock_dir(opts["sock_dir"])
    data = SQLiteDataCache(opts["cachedir"], still_known=lambda m: bool(sessions.minion_sessions(m)))
    _session(sessions, "web1")
    data.store("web1", "grains", {"owner": "old"})
    assert data.fetch("web1", "grains") == {"owner": "old"}
    revocation.forget_minions(opts, ["web1"], "key delete")
    data.store("web1", "grains", {"owner": "old, late"})          # the racing request
    assert data.fetch("web1", "grains") is None
    _session(sessions, "web1")                                      # the new holder's session
    data.store("web1", "grains", {"owner": "new"})
    assert data.fetch("web1", "grains") == {"owner": "new"}
