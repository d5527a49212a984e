"""PostgreSQL going away and coming back, as docs/operations.md says: every store operation
fails fast with ``StoreUnavailable`` naming the server, a master's own sessions keep working,
an auth is refused (signed) with ``store_unavailable``, and once the server is back the pooled
connections that died are replaced without anyone noticing."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.crypt.handshake import SessionKeys, finish_auth, now_ms, start_auth
from runtime.crypt.identity import Identity
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.store import factory
from runtime.master.store.errors import StoreUnavailable
from tests.pgserver import Postgres


class TrustAll:
    def check(self, master_pub: bytes) -> None:
        pass

    def remember(self, master_pub: bytes) -> None:
        pass


@pytest.fixture
def pg_opts(postgres: Postgres, tmp_path: Path) -> Iterator[dict[str, Any]]:
    db = postgres.fresh_database("outage")
    opts = {"master_store": "postgres", "master_store_dsn": postgres.dsn(db), "pki_dir": str(tmp_path / "pki"),
            "cachedir": str(tmp_path / "cache"), "sock_dir": str(tmp_path / "sock"), "id": "m1",
            "master_store_connect_timeout": 2, "auto_accept": True}
    factory.init_store(opts)
    yield opts


def test_down_then_back(postgres: Postgres, pg_opts: dict[str, Any]) -> None:
    stores = factory.open_master_stores(pg_opts)
    master = Identity.generate()
    auth = AuthService(master, stores.keys, stores.sessions, AuthSettings(auto_accept=True))
    stores.sessions.reset()
    minion = Identity.generate()
    attempt = start_auth(minion, "web1")
    assert finish_auth(attempt, auth.handle(attempt.load).reply, TrustAll()).outcome == "accepted"
    stores.jobs.add_job("20260101000000000001", "test.ping", [], "*", "glob", "root", ["web1"])
    held = SessionKeys(os.urandom(16), "web1", os.urandom(32), os.urandom(32), now_ms())
    stores.sessions.open_session(held)

    postgres.stop()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as raised:
            stores.jobs.add_return("20260101000000000001", "web1", "test.ping", True, True, 0)
        assert time.monotonic() - started < 10
        assert raised.value.reason == "store_unavailable"
        assert raised.value.message.startswith(f"PostgreSQL 127.0.0.1:{postgres.port}/")
        assert postgres.password not in raised.value.message
        for call in (lambda: stores.keys.list_keys(), lambda: stores.data.store("web1", "grains", {}),
                     lambda: stores.jobs.job("20260101000000000001"), lambda: stores.keys.accept("*")):
            with pytest.raises(StoreUnavailable):
                call()
        # the sessions this master holds keep working: requests are admitted, publications sealed
        now = now_ms()
        stores.sessions.admit(held.sid, 1, now, now)
        assert stores.sessions.next_publication()[1] >= 1
        # a hello is answered, signed, with the reason: the minion backs off and retries
        attempt = start_auth(minion, "web1")
        decision = auth.handle(attempt.load)
        assert decision.outcome == "refused" and decision.reason == "store_unavailable"
        assert finish_auth(attempt, decision.reply, TrustAll()).reason == "store_unavailable"
    finally:
        postgres.start()
    # back: the dead pooled connections are replaced on first use, nothing to restart
    assert stores.jobs.add_return("20260101000000000001", "web1", "test.ping", True, True, 0)
    assert stores.keys.list_keys()["minions"] == ["web1"]
    attempt = start_auth(minion, "web1")
    assert finish_auth(attempt, auth.handle(attempt.load).reply, TrustAll()).outcome == "accepted"
    stores.close()


def test_a_restart_between_two_requests_goes_unnoticed(postgres: Postgres, pg_opts: dict[str, Any]) -> None:
    data, keys = factory.open_data_cache(pg_opts), factory.open_key_store(pg_opts)
    data.store("web1", "grains", {"v": 1})        # a connection now idles in the pool
    postgres.stop()
    postgres.start()
    data.store("web1", "grains", {"v": 2})        # that one is dead: the work runs on a new one
    keys.admit("web2", Identity.generate().public_raw)
    postgres.stop()
    postgres.start()
    assert keys.admit("web3", Identity.generate().public_raw) == "pending"    # a locked write, likewise
    assert data.fetch("web1", "grains") == {"v": 2}
    data.close()
    keys.close()


def test_a_write_sent_again_after_a_restart_leaves_a_newer_row_alone(postgres: Postgres,
                                                                     pg_opts: dict[str, Any]) -> None:
    """PgDatabase.write sends ``again`` on its second try (the pooled connection found dead, the
    first send perhaps committed): the data cache's upsert then leaves alone a row newer than the
    one it repeats, and still replaces an older one."""
    from runtime.master.store.pg_data import UPSERT, UPSERT_UNLESS_NEWER

    data = factory.open_data_cache(pg_opts)
    db = data.db  # type: ignore[attr-defined]
    db.write(UPSERT, ("web1", "grains", '{"v": "newer"}', 2000.0))      # a connection now idles in the pool
    postgres.stop()
    postgres.start()
    assert db.write(UPSERT, ("web1", "grains", '{"v": "older"}', 1000.0), again=UPSERT_UNLESS_NEWER) == 0
    assert data.fetch("web1", "grains") == {"v": "newer"}
    postgres.stop()
    postgres.start()
    assert db.write(UPSERT, ("web1", "grains", '{"v": 3}', 3000.0), again=UPSERT_UNLESS_NEWER) == 1
    assert data.fetch("web1", "grains") == {"v": 3}
    # on a live connection the first statement is the one sent: a plain upsert
    assert db.write(UPSERT, ("web1", "grains", '{"v": 4}', 1000.0), again=UPSERT_UNLESS_NEWER) == 1
    assert data.fetch("web1", "grains") == {"v": 4}
    data.close()


def test_a_return_after_a_restart_is_stored_once(postgres: Postgres, pg_opts: dict[str, Any]) -> None:
    # a return is one autocommit statement (PgDatabase.write): on the dead pooled connection it is
    # sent again on a new one, stored, and a second return of the minion is still a duplicate
    jobs = factory.open_job_cache(pg_opts)
    assert jobs.add_job("20990101000000000101", "test.ping", [], "*", "glob", "root", ["web1", "web2"])
    assert jobs.add_return("20990101000000000101", "web1", "test.ping", True, True, 0)
    postgres.stop()
    postgres.start()
    assert jobs.add_return("20990101000000000101", "web2", "test.ping", True, True, 0)
    assert not jobs.add_return("20990101000000000101", "web2", "test.ping", False, True, 0)
    assert sorted(jobs.returns("20990101000000000101")) == ["web1", "web2"]
    jobs.close()


def test_returns_arriving_while_the_job_cache_is_away_are_kept_then_handed_over(
        postgres: Postgres, pg_opts: dict[str, Any]) -> None:
    import zmq

    from runtime import codec, protocol, transport
    from runtime.events import EVENT_PULL, EventPusher
    from runtime.master.handlers.context import Refused
    from runtime.master.handlers.jobs import drain_spool, record_return

    ctx = zmq.Context()
    bus = transport.make_socket(ctx, zmq.PULL)
    transport.bind(bus, transport.ipc_address(pg_opts["sock_dir"], EVENT_PULL))
    events = EventPusher(ctx, pg_opts["sock_dir"])
    stores = factory.open_master_stores(pg_opts)
    stores.jobs.add_job("20260101000000000001", "test.ping", ["x"], "*", "glob", "root", ["web1", "web2"])

    def ret(minion: str, jid: str = "20260101000000000001") -> protocol.JobReturn:
        return protocol.JobReturn(jid=jid, fun="test.ping", fun_args=["x"], ret=f"from {minion}", retcode=0,
                                  success=True)

    def never(job: dict[str, Any], minion: str) -> bool:
        return False

    postgres.stop()
    try:
        for minion, load in (("web1", ret("web1")), ("web2", ret("web2")), ("eve", ret("eve")),
                             ("web1", ret("web1", "20260101000000000999"))):
            with pytest.raises(StoreUnavailable):
                record_return(stores.jobs, events, never, minion, load)
            assert stores.spool.keep(minion, load)
        assert stores.spool.keep("web1", ret("web1"))              # sent twice: kept once
        assert stores.spool.count() == 4
        assert drain_spool(stores.spool, stores.jobs, events, never) == (0, [])
        assert stores.spool.count() == 4                            # still away: all kept
    finally:
        postgres.start()
    stored, refused = drain_spool(stores.spool, stores.jobs, events, never)
    assert stored == 2 and sorted(refused) == ["eve for 20260101000000000001: not_targeted",
                                               "web1 for 20260101000000000999: unknown_job"]
    assert stores.spool.count() == 0
    assert stores.jobs.returns("20260101000000000001") == {
        m: {"return": f"from {m}", "success": True, "retcode": 0} for m in ("web1", "web2")}
    fired = []
    while bus.poll(2000):
        tag, data = bus.recv_multipart()
        fired.append((tag.decode(), codec.unpack(data)["return"]))
        if len(fired) == 2:
            break
    assert sorted(fired) == [("salt/job/20260101000000000001/ret/web1", "from web1"),
                             ("salt/job/20260101000000000001/ret/web2", "from web2")]
    with pytest.raises(Refused):                                    # and the first return won
        record_return(stores.jobs, events, never, "web1", ret("web1"))
    stores.close()
    events.close()
    bus.close(linger=0)
    ctx.term()
