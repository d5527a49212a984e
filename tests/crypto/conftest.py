from __future__ import annotations

from dataclasses import dataclass

import pytest

from runtime.crypt.channel import ClientChannel, ServerChannel
from runtime.crypt.handshake import AuthResult, finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.crypt.trust import MasterTrust
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.store.file_keys import FileKeyStore
from runtime.master.store.sqlite_sessions import SQLiteSessionStore


@dataclass
class Fleet:
    master: Identity
    keys: FileKeyStore
    store: SQLiteSessionStore
    auth: AuthService
    tmp: object

    def trust(self, name: str = "minion", finger: str | None = None) -> MasterTrust:
        return MasterTrust(str(self.tmp / f"pki-{name}"), finger)

    def authenticate(self, minion: Identity, minion_id: str, trust: MasterTrust | None = None) -> AuthResult:
        attempt = start_auth(minion, minion_id)
        decision = self.auth.handle(attempt.load)
        return finish_auth(attempt, decision.reply, trust or self.trust(minion_id))

    def accepted(self, minion_id: str = "web1") -> tuple[Identity, AuthResult, ClientChannel, ServerChannel]:
        minion = Identity.generate()
        self.keys.admit(minion_id, minion.public_raw, auto_accept=True)
        result = self.authenticate(minion, minion_id)
        assert result.outcome == "accepted", result
        client = ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)
        return minion, result, client, ServerChannel(self.store)


def make_fleet(tmp_path) -> Fleet:
    master = Identity.generate()
    keys = FileKeyStore(str(tmp_path / "master-pki"))
    store = SQLiteSessionStore(str(tmp_path / "sessions.sqlite"))
    return Fleet(master, keys, store, AuthService(master, keys, store, AuthSettings(heartbeat_s=7.5)), tmp_path)


@pytest.fixture
def fleet(tmp_path) -> Fleet:
    made = make_fleet(tmp_path)
    yield made
    made.store.close()
