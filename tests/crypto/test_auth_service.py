"""The master's _auth handler end to end: key store, shared nonces, sessions, grants, events."""

from __future__ import annotations

import pytest

from runtime import codec
from runtime.crypt.channel import ClientChannel, ServerChannel
from runtime.crypt.errors import MasterKeyMismatch
from runtime.crypt.handshake import finish_auth, now_ms, start_auth
from runtime.crypt.identity import Identity, public_to_pem
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.store.file_keys import FileKeyStore


def wire(load):
    return codec.unpack(codec.pack(load))


def test_pending_then_accepted_flow_with_events(fleet):
    minion = Identity.generate()
    attempt = start_auth(minion, "web1")
    decision = fleet.auth.handle(wire(attempt.load))
    assert decision.outcome == "pending" and decision.session is None
    assert decision.event() == {"result": True, "act": "pend", "id": "web1",
                                "pub": public_to_pem(minion.public_raw).decode()}
    assert finish_auth(attempt, wire(decision.reply), fleet.trust()).outcome == "pending"
    assert "web1" in decision.log_line() and minion.fingerprint in decision.log_line()
    fleet.keys.accept("web1")
    attempt = start_auth(minion, "web1")
    decision = fleet.auth.handle(wire(attempt.load))
    assert decision.outcome == "accepted" and decision.event()["act"] == "accept"
    result = finish_auth(attempt, wire(decision.reply), fleet.trust())
    assert result.grant.heartbeat_s == 7.5
    assert result.grant.publish_key == fleet.store.current_publish_key().key
    assert fleet.store.get_session(result.session.sid) == decision.session
    # the session works for sealed requests right away
    ctr, data = ClientChannel(result.session).seal_request({"cmd": "_pillar"})
    assert ServerChannel(fleet.store).open_request(codec.unpack_envelope(data).load).minion_id == "web1"


def test_rejected_and_denied(fleet):
    good, bad = Identity.generate(), Identity.generate()
    fleet.keys.admit("web1", good.public_raw, auto_accept=True)
    decision = fleet.auth.handle(start_auth(bad, "web1").load)
    assert decision.outcome == "denied" and decision.event()["act"] == "denied"
    assert decision.event()["result"] is False
    assert fleet.keys.denied_key("web1").public_raw == bad.public_raw
    assert fleet.store.minion_sessions("web1") == []
    fleet.keys.reject("web1", include_accepted=True)
    attempt = start_auth(good, "web1")
    decision = fleet.auth.handle(attempt.load)
    assert decision.outcome == "rejected"
    assert finish_auth(attempt, decision.reply, fleet.trust()).outcome == "rejected"


def test_auto_accept_and_autosign(fleet, tmp_path):
    auth = AuthService(fleet.master, fleet.keys, fleet.store,
                       AuthSettings(autosign=lambda mid: mid.startswith("auto-")))
    assert auth.handle(start_auth(Identity.generate(), "auto-1").load).outcome == "accepted"
    assert auth.handle(start_auth(Identity.generate(), "other").load).outcome == "pending"
    auth = AuthService(fleet.master, fleet.keys, fleet.store, AuthSettings(auto_accept=True))
    assert auth.handle(start_auth(Identity.generate(), "any").load).outcome == "accepted"


def test_replayed_hello_is_refused_signed(fleet):
    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    attempt = start_auth(minion, "web1")
    assert fleet.auth.handle(attempt.load).outcome == "accepted"
    decision = fleet.auth.handle(attempt.load)
    assert (decision.outcome, decision.reason) == ("refused", "replayed")
    assert finish_auth(attempt, decision.reply, fleet.trust()).reason == "replayed"
    assert len(fleet.store.minion_sessions("web1")) == 1


def test_malformed_hello_gets_unsigned_error(fleet):
    decision = fleet.auth.handle({"cmd": "_auth", "id": "x"})
    assert decision.outcome == "refused" and decision.reason == "malformed"
    assert set(decision.reply) == {"error"} and decision.event() is None
    assert fleet.keys.list_keys()["minions_pre"] == []


def test_bad_signature_is_refused_and_stores_nothing(fleet):
    attempt = start_auth(Identity.generate(), "web1")
    load = dict(attempt.load, pub=Identity.generate().public_raw)
    decision = fleet.auth.handle(load)
    assert (decision.outcome, decision.reason) == ("refused", "bad_signature")
    assert decision.event() is None          # nothing proven about the claimed id
    assert fleet.keys.lookup("web1") is None


@pytest.mark.parametrize("bad", ["../../etc/passwd", "../x", "a/b", "a\\b", ".", "..", ".tmp-x", "a\nb", "x\x00y"])
def test_invalid_id_refused_without_an_event(fleet, bad):
    decision = fleet.auth.handle(start_auth(Identity.generate(), bad).load)
    assert (decision.outcome, decision.reason) == ("refused", "invalid_id")
    assert decision.event() is None          # never put on the bus (a reactor may use it as a path)


def test_pending_full(fleet, tmp_path):
    keys = FileKeyStore(str(tmp_path / "small"), max_pending=2)
    auth = AuthService(fleet.master, keys, fleet.store)
    outcomes = [auth.handle(start_auth(Identity.generate(), f"m{i}").load) for i in range(4)]
    assert [d.outcome for d in outcomes] == ["pending", "pending", "refused", "refused"]
    assert outcomes[2].reason == "pending_full" and outcomes[2].event()["act"] == "full"
    assert len(keys.list_keys()["minions_pre"]) == 2


def test_clock_skew_round_trip(fleet):
    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    slow = now_ms() - 3_600_000  # the minion's clock is an hour slow
    attempt = start_auth(minion, "web1", now=slow)
    result = finish_auth(attempt, fleet.auth.handle(attempt.load).reply, fleet.trust(), now=slow)
    assert result.reason == "clock_skew"
    attempt = start_auth(minion, "web1", now=now_ms() - 3_600_000, clock_offset_ms=result.clock_offset_ms)
    assert finish_auth(attempt, fleet.auth.handle(attempt.load).reply, fleet.trust()).outcome == "accepted"


def test_key_deleted_during_auth_drops_the_new_session(fleet):
    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)

    class DeleteWhileOpening:
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def open_session(self, keys):
            pkey = self.store.open_session(keys)
            fleet.keys.delete("web1")            # the operator runs `saltpan key -d web1` right now
            return pkey

    auth = AuthService(fleet.master, fleet.keys, DeleteWhileOpening(fleet.store))
    attempt = start_auth(minion, "web1")
    decision = auth.handle(attempt.load)
    assert (decision.outcome, decision.reason) == ("refused", "revoked")
    assert fleet.store.minion_sessions("web1") == []
    assert finish_auth(attempt, decision.reply, fleet.trust()).session is None


def test_minion_refuses_a_changed_master_key(fleet, tmp_path):
    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    trust = fleet.trust("pinned")
    assert fleet.authenticate(minion, "web1", trust).outcome == "accepted"
    impostor = AuthService(Identity.generate(), fleet.keys, fleet.store, AuthSettings())
    attempt = start_auth(minion, "web1")
    with pytest.raises(MasterKeyMismatch) as err:
        finish_auth(attempt, impostor.handle(attempt.load).reply, trust)
    assert err.value.reason == "master_key_changed"


def test_corrupt_key_file_is_refused_and_logged_not_raised(fleet, tmp_path):
    (tmp_path / "master-pki" / "minions" / "web1").write_text("garbage")
    decision = fleet.auth.handle(start_auth(Identity.generate(), "web1").load)
    assert (decision.outcome, decision.reason) == ("refused", "key_store_error")
    assert "web1" in decision.log_line() and "not a PEM public key" in decision.log_line()
    assert "garbage" not in str(decision.reply)


def test_hello_made_before_the_master_started_is_refused(fleet):
    """A hello captured before a restart and never delivered (so its nonce was never claimed):
    refused clock_skew with the master's time, which lets an honest minion retry at once."""
    minion = Identity.generate()
    fleet.keys.admit("web1", minion.public_raw, auto_accept=True)
    captured = start_auth(minion, "web1")
    fleet.store.reset(now=now_ms() + 1000)            # the master restarts (a second later)
    decision = fleet.auth.handle(captured.load)
    assert (decision.outcome, decision.reason) == ("refused", "clock_skew")
    assert "before this master started" in decision.detail
    result = finish_auth(captured, decision.reply, fleet.trust("web1"))
    retry = start_auth(minion, "web1", clock_offset_ms=max(result.clock_offset_ms, 1500))
    assert fleet.auth.handle(retry.load).outcome == "accepted"


def test_client_proof_made_before_the_master_started_is_stale():
    from runtime.crypt.clientkey import make_proof, verify_proof
    from runtime.crypt.errors import ReplayRefused

    key = b"k" * 32
    proof = make_proof(key, "alice", b"body")
    assert verify_proof(key, proof, b"body", not_before_ms=proof["ts"]) == ("alice", proof["nonce"])
    with pytest.raises(ReplayRefused) as refused:
        verify_proof(key, proof, b"body", not_before_ms=proof["ts"] + 1)
    assert refused.value.reason == "stale"
