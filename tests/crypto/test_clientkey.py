"""Client keys: a local publisher proves possession without sending the key."""

from __future__ import annotations

import os
import stat

import pytest

from runtime.crypt.clientkey import (
    client_key_path,
    load_client_key,
    load_or_create_client_key,
    make_proof,
    verify_proof,
)
from runtime.crypt.errors import BadMessage, KeyFileError, ReplayRefused
from runtime.crypt.handshake import now_ms


def test_key_file(tmp_path):
    path = client_key_path(str(tmp_path / "cache"), "root")
    assert path.endswith("/.root_key")
    key = load_or_create_client_key(path)
    assert len(key) == 32 and load_client_key(path) == key
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "cache").st_mode) == 0o700
    os.chmod(path, 0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_client_key(path)
    with pytest.raises(ValueError):
        client_key_path(str(tmp_path), "../x")


def test_proof_binds_user_body_and_time(tmp_path):
    key = os.urandom(32)
    body = b"packed publish request"
    proof = make_proof(key, "alice", body)
    assert verify_proof(key, proof, body) == ("alice", proof["nonce"])
    assert key not in repr(proof).encode()
    with pytest.raises(BadMessage):
        verify_proof(key, proof, body + b"x")
    with pytest.raises(BadMessage):
        verify_proof(key, dict(proof, user="root"), body)
    with pytest.raises(BadMessage):
        verify_proof(os.urandom(32), proof, body)
    with pytest.raises(BadMessage):
        verify_proof(key, dict(proof, ts=proof["ts"] + 1), body)
    old = make_proof(key, "alice", body, now=now_ms() - 3_600_000)
    with pytest.raises(ReplayRefused):
        verify_proof(key, old, body)
    with pytest.raises(BadMessage):
        verify_proof(key, {"user": "alice"}, body)
