"""The master's shared SQLite state: sessions, revocation, publish epochs, serials, nonces."""

from __future__ import annotations

import multiprocessing
import os
import stat

import pytest

from runtime.crypt.errors import UnknownSession
from runtime.crypt.handshake import SessionKeys, now_ms
from runtime.master.store.sqlite_sessions import DB_NAME, SQLiteSessionStore


def session(minion_id: str, created: int | None = None) -> SessionKeys:
    return SessionKeys(os.urandom(16), minion_id, os.urandom(32), os.urandom(32), created or now_ms())


def test_file_modes(tmp_path):
    store = SQLiteSessionStore.in_sock_dir(str(tmp_path / "sock"))
    store.open_session(session("a"))
    assert stat.S_IMODE(os.stat(tmp_path / "sock").st_mode) == 0o700
    for name in os.listdir(tmp_path / "sock"):
        assert name.startswith(DB_NAME)
        assert stat.S_IMODE(os.stat(tmp_path / "sock" / name).st_mode) == 0o600, name


def test_open_session_returns_current_key_and_get(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    keys = session("web1")
    pkey = store.open_session(keys)
    assert pkey.epoch == 1 and pkey == store.current_publish_key()
    assert store.get_session(keys.sid) == keys
    assert store.get_session(b"x" * 16) is None
    assert store.publish_key_for(keys.sid) == pkey


def test_revoke_drops_sessions_and_rotates_atomically(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    a1, a2, b = session("web1"), session("web1"), session("web2")
    for keys in (a1, a2, b):
        old = store.open_session(keys)
    new = store.revoke("web1", "deleted")
    assert new.epoch == old.epoch + 1 and new.key != old.key
    assert store.get_session(a1.sid) is None and store.get_session(a2.sid) is None
    with pytest.raises(UnknownSession):
        store.admit(a1.sid, 1, now_ms(), now_ms())
    with pytest.raises(UnknownSession):
        store.publish_key_for(a2.sid)
    assert store.publish_key_for(b.sid) == new  # the others get the new epoch through their sessions


def test_serials_are_unique_across_processes(tmp_path):
    path = str(tmp_path / "s.db")
    SQLiteSessionStore(path).current_publish_key()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()

    def take(n):
        store = SQLiteSessionStore(path)
        queue.put([store.next_publication()[1] for _ in range(n)])

    procs = [ctx.Process(target=take, args=(200,)) for _ in range(3)]
    for proc in procs:
        proc.start()
    serials = [s for _ in procs for s in queue.get(timeout=60)]
    for proc in procs:
        proc.join(10)
    assert sorted(serials) == list(range(1, 601))


def test_rotation_resets_serials_and_keeps_two_epochs(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    store.next_publication()
    store.next_publication()
    store.rotate_publish_key("test")
    store.rotate_publish_key("test")
    pkey, serial = store.next_publication()
    assert (pkey.epoch, serial) == (3, 1)
    with store._tx() as conn:
        assert [r[0] for r in conn.execute("SELECT epoch FROM publish_keys ORDER BY epoch")] == [2, 3]


def test_periodic_rotation(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    first = store.current_publish_key()
    assert store.rotate_if_older(60_000, now=first.created_ms + 59_000) is None
    rotated = store.rotate_if_older(60_000, now=first.created_ms + 61_000)
    assert rotated is not None and rotated.epoch == first.epoch + 1


def test_reset_forgets_sessions_keeps_live_nonces_and_starts_a_new_epoch(tmp_path):
    """Master start: sessions go, a new epoch starts; a nonce claimed before the restart stays
    claimed until it expires (a hello captured then cannot be replayed after the restart); the
    start time is recorded for every process that opens the store."""
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    keys = session("web1")
    old = store.open_session(keys)
    store.claim_nonce("hello", b"live", now_ms() + 60_000)
    store.claim_nonce("hello", b"expired", now_ms() - 1)
    assert store.started_ms() == 0
    new = store.reset(now=now_ms())
    assert new.epoch == old.epoch + 1
    assert store.session_count() == 0
    assert not store.claim_nonce("hello", b"live", now_ms() + 60_000)
    assert store.claim_nonce("hello", b"expired", now_ms() + 60_000)
    started = store.started_ms()
    assert abs(started - now_ms()) < 5_000
    assert SQLiteSessionStore(str(tmp_path / "s.db")).started_ms() == started   # another worker
    store.reset(now=started + 10)
    assert SQLiteSessionStore(str(tmp_path / "s.db")).started_ms() == started + 10


def test_sessions_per_minion_are_bounded(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"), max_sessions_per_minion=2)
    made = [session("web1", created=1000 + i) for i in range(5)]
    for keys in made:
        store.open_session(keys)
    assert store.minion_sessions("web1") == [made[3].sid, made[4].sid]


def test_expire_idle_and_last_seen(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    now = now_ms()
    old, fresh = session("old", now - 100_000), session("fresh", now)
    store.open_session(old)
    store.open_session(fresh)
    store.admit(fresh.sid, 1, now, now)
    assert store.last_seen()["fresh"] == now
    assert store.expire_idle(50_000, now=now) == ["old"]
    assert store.minion_sessions("old") == [] and store.minion_sessions("fresh") == [fresh.sid]


def test_claim_nonce_once_until_expiry(tmp_path):
    store = SQLiteSessionStore(str(tmp_path / "s.db"))
    assert store.claim_nonce("hello", b"n1", now_ms() + 60_000)
    assert not store.claim_nonce("hello", b"n1", now_ms() + 60_000)
    assert store.claim_nonce("client", b"n1", now_ms() + 60_000)  # scopes are separate
    assert store.claim_nonce("hello", b"n2", now_ms() - 1)
    assert store.claim_nonce("hello", b"n2", now_ms() + 60_000)   # the expired claim is gone


def test_memory_store_works_for_single_process_tools():
    store = SQLiteSessionStore(":memory:")
    keys = session("a")
    store.open_session(keys)
    store.admit(keys.sid, 1, now_ms(), now_ms())
    assert store.session_count() == 1
