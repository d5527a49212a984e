"""Identity keys on disk: modes, fingerprints, refusals with the file named."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from runtime.crypt.errors import KeyFileError
from runtime.crypt.identity import (
    Identity,
    fingerprint,
    load_identity,
    load_or_create_identity,
    normalize_fingerprint,
    public_from_pem,
    save_identity,
    verify_signature,
)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_create_save_load_modes(tmp_path):
    pki = tmp_path / "pki"
    identity, created = load_or_create_identity(str(pki), "minion")
    assert created
    assert mode(pki) == 0o700
    assert mode(pki / "minion.pem") == 0o600
    assert mode(pki / "minion.pub") == 0o600
    again, created = load_or_create_identity(str(pki), "minion")
    assert not created
    assert again.public_raw == identity.public_raw
    assert (pki / "minion.pem").read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public_from_pem((pki / "minion.pub").read_bytes()) == identity.public_raw


def test_existing_loose_directory_is_tightened(tmp_path):
    pki = tmp_path / "pki"
    pki.mkdir(mode=0o755)
    os.chmod(pki, 0o755)
    save_identity(Identity.generate(), str(pki), "master")
    assert mode(pki) == 0o700


def test_fingerprint_is_sha256_of_raw_key_colon_hex():
    identity = Identity.generate()
    fp = identity.fingerprint
    assert fp == fingerprint(identity.public_raw)
    assert fp.replace(":", "") == hashlib.sha256(identity.public_raw).hexdigest()
    assert len(fp.split(":")) == 32 and all(len(p) == 2 for p in fp.split(":"))
    assert normalize_fingerprint(fp.upper()) == fp
    assert normalize_fingerprint("sha256:" + fp.replace(":", "")) == fp
    with pytest.raises(ValueError):
        normalize_fingerprint("ab:cd")
    assert identity.fingerprint in repr(identity) and "PRIVATE" not in repr(identity)


def test_sign_verify():
    identity = Identity.generate()
    sig = identity.sign(b"data")
    assert verify_signature(identity.public_raw, sig, b"data")
    assert not verify_signature(identity.public_raw, sig, b"datA")
    assert not verify_signature(Identity.generate().public_raw, sig, b"data")
    assert not verify_signature(identity.public_raw, sig[:-1], b"data")
    assert not verify_signature(identity.public_raw[:31], sig, b"data")


def test_group_readable_private_key_refused(tmp_path):
    pem, _ = save_identity(Identity.generate(), str(tmp_path), "minion")
    os.chmod(pem, 0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_identity(str(tmp_path), "minion")


def test_symlinked_private_key_refused(tmp_path):
    save_identity(Identity.generate(), str(tmp_path / "real"), "minion")
    (tmp_path / "pki").mkdir(mode=0o700)
    os.symlink(tmp_path / "real" / "minion.pem", tmp_path / "pki" / "minion.pem")
    with pytest.raises(KeyFileError, match="symlink"):
        load_identity(str(tmp_path / "pki"), "minion")


def test_mismatched_public_key_refused(tmp_path):
    save_identity(Identity.generate(), str(tmp_path), "minion")
    (tmp_path / "minion.pub").write_bytes(Identity.generate().public_pem())
    with pytest.raises(KeyFileError, match="does not belong"):
        load_identity(str(tmp_path), "minion")


def test_salt_rsa_key_is_refused_with_a_clear_message(tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "minion.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    os.chmod(pem, 0o600)
    with pytest.raises(KeyFileError, match="Ed25519"):
        load_identity(str(tmp_path), "minion")
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(KeyFileError, match="RSA"):
        public_from_pem(pub, "x.pub")


def test_garbage_key_file(tmp_path):
    (tmp_path / "minion.pem").write_bytes(b"not a key")
    os.chmod(tmp_path / "minion.pem", 0o600)
    with pytest.raises(KeyFileError, match=str(tmp_path / "minion.pem")):
        load_identity(str(tmp_path), "minion")
