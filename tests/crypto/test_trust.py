"""Minion-side trust in the master key: TOFU with a logged fingerprint, pinning, change refusal."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from runtime.crypt.errors import MasterKeyMismatch
from runtime.crypt.identity import Identity, public_to_pem
from runtime.crypt.trust import MASTER_KEY_FILE, MasterTrust


def test_first_use_is_saved_and_logged_with_fingerprint(tmp_path, caplog):
    master = Identity.generate()
    trust = MasterTrust(str(tmp_path / "pki"))
    trust.check(master.public_raw)
    with caplog.at_level(logging.WARNING, logger="runtime.crypt.trust"):
        trust.remember(master.public_raw)
    assert master.fingerprint in caplog.text
    path = tmp_path / "pki" / MASTER_KEY_FILE
    assert path.read_bytes() == public_to_pem(master.public_raw)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "pki").st_mode) == 0o700
    # a new process (restart) trusts the same key and refuses another
    again = MasterTrust(str(tmp_path / "pki"))
    again.check(master.public_raw)
    with pytest.raises(MasterKeyMismatch, match=master.fingerprint):
        again.check(Identity.generate().public_raw)


def test_changed_key_is_never_saved(tmp_path):
    master, other = Identity.generate(), Identity.generate()
    trust = MasterTrust(str(tmp_path))
    trust.remember(master.public_raw)
    with pytest.raises(MasterKeyMismatch):
        trust.remember(other.public_raw)
    assert (tmp_path / MASTER_KEY_FILE).read_bytes() == public_to_pem(master.public_raw)


def test_pinned_fingerprint(tmp_path, caplog):
    master, impostor = Identity.generate(), Identity.generate()
    trust = MasterTrust(str(tmp_path), master.fingerprint.upper())
    with pytest.raises(MasterKeyMismatch, match="master_finger"):
        trust.check(impostor.public_raw)
    with pytest.raises(MasterKeyMismatch):
        trust.remember(impostor.public_raw)
    assert not (tmp_path / MASTER_KEY_FILE).exists()
    trust.remember(master.public_raw)
    assert (tmp_path / MASTER_KEY_FILE).exists()


def test_cached_key_contradicting_the_pin_is_an_error_at_start(tmp_path):
    master, other = Identity.generate(), Identity.generate()
    MasterTrust(str(tmp_path)).remember(other.public_raw)
    with pytest.raises(MasterKeyMismatch, match="master_finger"):
        MasterTrust(str(tmp_path), master.fingerprint)


def test_preseeded_key_is_trusted_without_tofu(tmp_path):
    master = Identity.generate()
    (tmp_path / MASTER_KEY_FILE).write_bytes(master.public_pem())
    trust = MasterTrust(str(tmp_path))
    assert trust.known == master.public_raw
    with pytest.raises(MasterKeyMismatch):
        trust.check(Identity.generate().public_raw)


def test_bad_pin_spelling(tmp_path):
    with pytest.raises(ValueError, match="fingerprint"):
        MasterTrust(str(tmp_path), "12:34")
