"""The heartbeat period a master tells its minions grows with its fleet (runtime.master.heartbeats)."""

from __future__ import annotations

import time

from runtime.crypt.handshake import finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.heartbeats import PeriodForFleet, effective_period
from runtime.master.store.file_keys import FileKeyStore
from runtime.master.store.sqlite_sessions import SQLiteSessionStore


def test_period_is_the_configured_one_for_a_small_fleet() -> None:
    assert effective_period(5.0, 200.0, 0) == 5.0
    assert effective_period(5.0, 200.0, 1000) == 5.0


def test_period_keeps_the_fleet_near_the_rate() -> None:
    assert effective_period(5.0, 200.0, 10_000) == 50.0
    assert 10_000 / effective_period(5.0, 200.0, 10_000) == 200.0


def test_rate_zero_means_always_the_configured_period() -> None:
    assert effective_period(5.0, 0.0, 1_000_000) == 5.0


def test_session_count_is_read_at_most_once_per_refresh() -> None:
    counts = iter([4000, 8000])
    calls = []

    def count() -> int:
        calls.append(1)
        return next(counts)

    period = PeriodForFleet(5.0, 200.0, count, refresh_s=3600)
    assert period() == 20.0
    assert period() == 20.0
    assert len(calls) == 1
    period.refresh_s = 0.0
    time.sleep(0.001)
    assert period() == 40.0


def test_auth_grant_carries_the_period_for_the_fleet(tmp_path) -> None:
    master = Identity.generate()
    keys = FileKeyStore(str(tmp_path / "pki"))
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite"))
    try:
        settings = AuthSettings(auto_accept=True, heartbeat_s=5.0,
                                heartbeat_period=PeriodForFleet(5.0, 1.0, store.session_count, refresh_s=0.0))
        auth = AuthService(master, keys, store, settings)
        told = []
        for index in range(7):
            minion = Identity.generate()
            attempt = start_auth(minion, f"web{index}")
            result = finish_auth(attempt, auth.handle(attempt.load).reply, _trust(tmp_path, index))
            assert result.outcome == "accepted"
            told.append(result.grant.heartbeat_s)
        # the grant counts the sessions open with the new one: 1..7, at 1 heartbeat a second in all
        assert told == [5.0, 5.0, 5.0, 5.0, 5.0, 6.0, 7.0]
    finally:
        store.close()


def _trust(tmp_path, index):
    from runtime.crypt.trust import MasterTrust

    return MasterTrust(str(tmp_path / f"pki-minion{index}"), None)
