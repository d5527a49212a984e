"""The cluster's parts of the store: the change log's publications and shared events (both
backends: on SQLite there is nobody to share with, so nothing is kept), the cluster key in
PostgreSQL, and the relay acting on what another master recorded (docs/protocol.md "Masters in
one cluster")."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zmq

from runtime import codec, transport
from runtime.config import ConfigError
from runtime.crypt.handshake import SessionKeys
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublicationReceiver
from runtime.master.changes import ChangeLog, SharedEvent
from runtime.master.cluster import Relay, shared_tag
from runtime.master.event_publisher import RELAYED
from runtime.master.store import factory
from runtime.master.store.errors import StoreError
from tests.pgserver import Postgres
from tests.stores.conftest import _empty, other_master


@pytest.fixture
def pg_opts(postgres: Postgres, store_database: str, tmp_path: Path) -> dict[str, Any]:
    """A master on the contract tests' PostgreSQL database (what only PostgreSQL has: the cluster)."""
    _empty(postgres, store_database)
    return {"pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"), "sock_dir": str(tmp_path / "sock"),
            "id": "master-a", "master_store": "postgres", "master_store_dsn": postgres.dsn(store_database)}


def wait_notified(log: ChangeLog, more: Callable[[set[str], list[SharedEvent]], bool],
                  timeout: float = 5.0) -> tuple[set[str], list[SharedEvent]]:
    """What ``log.wait`` woke up with (the logs named, the events carried), waiting again while
    ``more(logs, events)`` (notifications may come in separate packets)."""
    woken: set[str] = set()
    carried: list[SharedEvent] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wake = log.wait(max(0.0, deadline - time.monotonic()))
        woken |= wake.logs
        carried.extend(wake.events)
        if not more(woken, carried):
            break
    return woken, carried


def test_publications_and_events_reach_the_other_masters(opts: dict[str, Any], tmp_path: Path) -> None:
    a = factory.open_change_log(opts)
    b = factory.open_change_log(other_master(opts, tmp_path))
    try:
        start, start_ev = b.latest(), b.latest_event()
        b.wait(0.0)                               # b listens from now on
        seq = a.record("publish", {"payload": {"jid": "1", "fun": "test.ping"}, "only": None}, "master-a")
        a.record_events("master-a", [("salt/job/1/new", codec.pack({"jid": "1"})),
                                     ("salt/auth", codec.pack({"id": "m1"}))])
        if opts.get("master_store", "sqlite") == "sqlite":      # one master: nobody to tell
            assert seq == 0 and b.since(start) == [] and b.events_since(start_ev) == []
            return
        # LISTEN woke up, naming the changes log; the events came in their notification
        woken, carried = wait_notified(b, lambda logs, got: len(got) < 2 or "changes" not in logs)
        assert woken == {"changes"}
        changes = b.since(start)
        assert [(c.seq, c.topic, c.master_id, c.data["payload"]["jid"]) for c in changes] == \
            [(seq, "publish", "master-a", "1")]
        events = b.events_since(start_ev)
        assert [(e.master_id, e.tag, codec.unpack(e.data)) for e in events] == \
            [("master-a", "salt/job/1/new", {"jid": "1"}), ("master-a", "salt/auth", {"id": "m1"})]
        assert [(e.seq, e.master_id, e.tag, e.data) for e in carried] == \
            [(e.seq, e.master_id, e.tag, e.data) for e in events]
        assert all(abs(e.at - r.at) < 1e-3 for e, r in zip(carried, events, strict=True))
        assert b.events_since(events[-1].seq) == []
        # events too big for one notification (8000 bytes) are not carried: it names the log
        big = [("salt/job/2/ret/m1", codec.pack({"return": "x" * 3000})), ("salt/job/2/ret/m2", codec.pack({"x": 1})),
               ("salt/job/2/ret/m3", codec.pack({"return": "y" * 3000}))]
        a.record_events("master-a", big)
        woken, carried = wait_notified(b, lambda logs, got: "events" not in logs and not got)
        assert woken == {"events"} and carried == []
        assert [(e.tag, e.data) for e in b.events_since(events[-1].seq)] == big
        # ... counted in bytes: 2,700 characters of a tag, 8,100 bytes of UTF-8, are not carried either
        wide = [("custom/" + "自" * 2700, codec.pack({"x": 1}))]
        a.record_events("master-a", wide)
        woken, carried = wait_notified(b, lambda logs, got: "events" not in logs and not got)
        assert woken == {"events"} and carried == []
        assert [(e.tag, e.data) for e in b.events_since(events[-1].seq)][-1] == wide[0]
        assert a.prune_events(0.0) == 6 and b.events_since(start_ev) == []
    finally:
        a.close()
        b.close()


def test_tags_kept_on_their_master() -> None:
    assert shared_tag("salt/job/1/ret/m1") and shared_tag("salt/key") and shared_tag("salt/presence/change")
    assert shared_tag("custom/minion/event")
    assert not shared_tag("salt/presence/present") and not shared_tag("saltpan/probe/x")


def test_cluster_id_needs_postgres(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cluster_id needs master_store: postgres"):
        factory.cluster_identity({"cluster_id": "c1", "pki_dir": str(tmp_path)}, Identity.generate())


def test_the_first_master_s_key_becomes_the_cluster_key(pg_opts: dict[str, Any], tmp_path: Path) -> None:
    opts = pg_opts
    first, second = Identity.generate(), Identity.generate()
    a = {**opts, "cluster_id": "c1"}
    b = {**other_master(opts, tmp_path), "cluster_id": "c1", "pki_dir": str(tmp_path / "pki-b")}
    assert factory.cluster_identity({**opts}, first) is first          # no cluster_id: its own key
    joined_a = factory.cluster_identity(a, first)
    joined_b = factory.cluster_identity(b, second)
    assert joined_a.public_raw == first.public_raw == joined_b.public_raw
    assert (Path(b["pki_dir"]) / "cluster.pub").read_bytes() == first.public_pem()
    with pytest.raises(StoreError, match="belongs to cluster 'c1', but this master's cluster_id is 'c2'"):
        factory.cluster_identity({**b, "cluster_id": "c2"}, second)
    lines = factory.rotate_cluster_key(a)
    assert lines[0].startswith(f"cluster c1: signing key {first.fingerprint} replaced by ")
    rotated = factory.cluster_identity(b, second)
    assert rotated.public_raw != first.public_raw and lines[0].endswith(rotated.fingerprint)
    masters = factory.cluster_masters(a)
    assert masters == []        # none started (reset) on this database yet
    sessions = factory.open_session_store(a)
    try:
        sessions.reset()
    finally:
        sessions.close()
    assert [m[0] for m in factory.cluster_masters(a)] == ["master-a"]


def test_the_relay_acts_on_another_master_s_changes(pg_opts: dict[str, Any], tmp_path: Path) -> None:
    """Master b's relay: a job published on a reaches b's Publisher sealed with b's publish key;
    a revocation recorded on a drops b's sessions; a's events are fired on b's bus (marked as
    relayed, so that b's EventPublisher does not hand them back), only those someone on b
    listens to once b's EventPublisher told, and b's own events go to the shared log."""
    opts = pg_opts
    b_opts = other_master(opts, tmp_path)
    a_stores, b_stores = factory.open_master_stores(opts), factory.open_master_stores(b_opts)
    ctx = zmq.Context()
    pub_pull = transport.make_socket(ctx, zmq.PULL)
    pub_pull.bind("inproc://publisher")
    bus_pull = transport.make_socket(ctx, zmq.PULL)
    bus_pull.bind("inproc://bus")
    pub_push = transport.make_socket(ctx, zmq.PUSH)
    pub_push.connect("inproc://publisher")
    bus_push = transport.make_socket(ctx, zmq.PUSH)
    bus_push.connect("inproc://bus")
    identity = Identity.generate()
    try:
        b_stores.sessions.reset()
        keys = SessionKeys(sid=b"s" * 16, minion_id="m1", c2s=b"k" * 32, s2c=b"K" * 32, created_ms=int(time.time() * 1000))
        pkey = b_stores.sessions.open_session(keys)
        relay = Relay(b_opts, identity, b_stores.changes, b_stores.sessions, pub_push, bus_push)
        a_stores.changes.record("publish", {"payload": {"jid": "20260101000000000001", "fun": "test.ping"},
                                            "only": ["m1"]}, "master-a")
        a_stores.changes.record_events("master-a", [("salt/job/20260101000000000001/new", codec.pack({"x": 1}))])
        assert relay.catch_up() == 2
        assert pub_pull.poll(2000)
        topic, body = pub_pull.recv_multipart()
        assert topic == transport.minion_topic("m1")
        receiver = PublicationReceiver(identity.public_raw, pkey)
        assert receiver.open(body).payload["jid"] == "20260101000000000001"
        assert bus_pull.poll(2000)
        tag, data, marker = bus_pull.recv_multipart()   # marked: the EventPublisher does not hand it back
        assert tag == b"salt/job/20260101000000000001/new" and codec.unpack(data) == {"x": 1}
        assert marker == RELAYED
        relay.observe(b"salt/auth", codec.pack({"id": "m9"}))
        relay.observe(b"salt/presence/present", codec.pack({"present": []}))
        assert relay.flush() == 1
        assert [(e.master_id, e.tag) for e in a_stores.changes.events_since(0)][-1] == ("master-b", "salt/auth")
        # told what b's bus is listened to: a's events nobody on b listens to are not fired
        relay.topics = frozenset({b"salt/key"})
        a_stores.changes.record_events("master-a", [("salt/job/20260101000000000002/new", codec.pack({"x": 2})),
                                                    ("salt/key", codec.pack({"act": "accept"}))])
        assert relay.catch_up({"events"}) == 3              # b's own salt/auth read too (not fired)
        assert bus_pull.poll(2000)
        assert bus_pull.recv_multipart()[0] == b"salt/key" and not bus_pull.poll(200)
        # events carried by their notification: fired from it, each once, and not again from the log
        while not b_stores.changes.wait(0.3).timed_out:     # LISTEN from now on; what came before, gone
            pass
        a_stores.changes.record_events("master-a", [("salt/key", codec.pack({"act": "delete"}))])
        woken, carried = wait_notified(b_stores.changes, lambda logs, got: not got)
        assert woken == set() and [e.tag for e in carried] == ["salt/key"]
        assert relay.take_events(carried) == 1 and relay.take_events(carried) == 0
        assert bus_pull.poll(2000) and codec.unpack(bus_pull.recv_multipart()[1]) == {"act": "delete"}
        assert relay.catch_up({"events"}) == 0 and not bus_pull.poll(200)
        # a revocation recorded by master a (a key deleted there)
        a_stores.sessions.revoke("m1", "deleted")
        assert b_stores.sessions.minion_sessions("m1") == [keys.sid]
        relay.catch_up({"events"})                      # woken for events: the revocation waits
        assert b_stores.sessions.minion_sessions("m1") == [keys.sid]
        relay.catch_up({"changes"})
        assert b_stores.sessions.minion_sessions("m1") == []
        assert b_stores.sessions.current_publish_key().epoch > pkey.epoch
    finally:
        for sock in (pub_pull, bus_pull, pub_push, bus_push):
            sock.close(linger=0)
        ctx.term()
        a_stores.close()
        b_stores.close()


def test_a_row_committed_after_a_higher_numbered_one_is_not_skipped() -> None:
    """Two masters insert at once: seq 12 commits before seq 11.  The reader hands out 12 at once,
    then 11 when it appears, each once; a number that never commits is given up after GAP_WAIT_S."""
    from runtime.master.cluster import GAP_WAIT_S, SeqCursor

    cursor = SeqCursor(10)
    assert [seq for seq in (12,) if cursor.take(seq)] == [12]          # 11 not committed yet
    cursor.advance(0.0)
    assert cursor.low == 10
    assert [seq for seq in (11, 12) if cursor.take(seq)] == [11]       # read again from 10: 12 not twice
    cursor.advance(1.0)
    assert cursor.low == 12 and cursor.handled == set()
    assert cursor.take(14) and not cursor.take(14)                      # 13 rolled back: never commits
    cursor.advance(2.0)
    assert cursor.low == 12
    cursor.advance(2.0 + GAP_WAIT_S)
    assert cursor.low == 14 and not cursor.take(13)
