"""Ed25519 identity keys: generate, save, load, sign, verify, fingerprint.

Files follow Salt's names in ``pki_dir``: ``master.pem`` / ``master.pub`` on a master,
``minion.pem`` / ``minion.pub`` on a minion.  The private key is PKCS#8 PEM (unencrypted), the
public key SubjectPublicKeyInfo PEM; both files are 0600 in a 0700 directory.  A fingerprint is
the SHA-256 of the 32-byte raw public key, shown as colon-separated lower-case hex pairs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from runtime.crypt.ed25519_strict import off_curve_problem, public_key_problem, signature_problem
from runtime.crypt.errors import KeyFileError
from runtime.private_files import PrivateFileError, ensure_private_dir, read_private, write_private

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64


def fingerprint(public_raw: bytes) -> str:
    """SHA-256 of the raw public key as ``ab:cd:...`` (32 pairs)."""
    digest = hashlib.sha256(public_raw).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def normalize_fingerprint(text: str) -> str:
    """Accept ``AB:CD..``, ``abcd..`` or ``sha256:abcd..`` spellings; return the canonical form."""
    hexdigits = text.strip().lower().removeprefix("sha256:").replace(":", "")
    if len(hexdigits) != 64 or any(c not in "0123456789abcdef" for c in hexdigits):
        raise ValueError(f"not a SHA-256 key fingerprint: {text!r} (expected 32 colon-separated hex pairs)")
    return ":".join(hexdigits[i:i + 2] for i in range(0, 64, 2))


def public_to_pem(public_raw: bytes) -> bytes:
    problem = public_key_problem(public_raw)
    if problem is not None:
        raise ValueError(f"refusing to write an unusable Ed25519 key: {problem}")
    key = Ed25519PublicKey.from_public_bytes(public_raw)
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def public_from_pem(pem: bytes | str, source: str = "public key") -> bytes:
    """Raw 32-byte public key from PEM text; :class:`KeyFileError` if it is not an Ed25519 key, or one
    no private key exists for (small order) or with a non-canonical encoding (``ed25519_strict``)."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_public_key(data.strip() + b"\n")
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{source}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{source}: a {type(key).__name__.lstrip('_')} key; saltpan uses Ed25519 keys "
                           "(Salt's RSA keys cannot be reused)")
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    problem = off_curve_problem(raw)
    if problem is not None:
        raise KeyFileError(f"{source}: refused: {problem}")
    return raw


def verify_signature(public_raw: bytes, signature: bytes, data: bytes) -> bool:
    """True when ``signature`` is a valid Ed25519 signature of ``data`` by ``public_raw``, the key
    and the signature both strictly encoded (no small-order key or R, no S >= L: see
    ``ed25519_strict``)."""
    if len(public_raw) != PUBLIC_KEY_SIZE or len(signature) != SIGNATURE_SIZE:
        return False
    key = _verifier(public_raw)
    if key is None or signature_problem(signature) is not None:
        return False
    try:
        key.verify(signature, data)
    except InvalidSignature:
        return False
    return True


@lru_cache(maxsize=256)
def _verifier(public_raw: bytes) -> Ed25519PublicKey | None:
    """The key object of an accepted public key, None for a refused one: parsed once per key (a
    minion checks every publication against its master's one key)."""
    if public_key_problem(public_raw) is not None:
        return None
    try:
        return Ed25519PublicKey.from_public_bytes(public_raw)
    except ValueError:
        return None


@dataclass(frozen=True, eq=False)
class Identity:
    """A private Ed25519 key with its raw public key.  ``repr`` never shows the secret."""

    private: Ed25519PrivateKey
    public_raw: bytes

    @classmethod
    def generate(cls) -> Identity:
        return cls.from_private(Ed25519PrivateKey.generate())

    @classmethod
    def from_private(cls, private: Ed25519PrivateKey) -> Identity:
        raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return cls(private, raw)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_raw)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)

    def private_pem(self) -> bytes:
        return self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())

    def public_pem(self) -> bytes:
        return public_to_pem(self.public_raw)

    def __repr__(self) -> str:
        return f"Identity(fingerprint={self.fingerprint})"


def key_paths(pki_dir: str, name: str) -> tuple[str, str]:
    """(``<pki_dir>/<name>.pem``, ``<pki_dir>/<name>.pub``)."""
    return os.path.join(pki_dir, f"{name}.pem"), os.path.join(pki_dir, f"{name}.pub")


def save_identity(identity: Identity, pki_dir: str, name: str, *, durable: bool = True) -> tuple[str, str]:
    """Write ``name.pem`` and ``name.pub`` (0600) into ``pki_dir`` (made 0700); return both paths.
    ``durable=False`` skips the fsyncs (``saltpan swarm``'s throwaway keys)."""
    ensure_private_dir(pki_dir)
    pem_path, pub_path = key_paths(pki_dir, name)
    write_private(pem_path, identity.private_pem(), durable=durable)
    write_private(pub_path, identity.public_pem(), durable=durable)
    return pem_path, pub_path


def load_identity(pki_dir: str, name: str) -> Identity:
    """Load ``name.pem``; check ``name.pub`` matches when present.  Errors name the file."""
    pem_path, pub_path = key_paths(pki_dir, name)
    try:
        data = read_private(pem_path)
    except PrivateFileError as exc:
        raise KeyFileError(str(exc)) from None
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{pem_path}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyFileError(f"{pem_path}: a {type(private).__name__.lstrip('_')}; saltpan uses Ed25519 keys "
                           "(move the old key away and a new one is generated)")
    identity = Identity.from_private(private)
    if os.path.exists(pub_path):
        try:
            pub = public_from_pem(read_private(pub_path, require_private=False), pub_path)
        except PrivateFileError as exc:
            raise KeyFileError(str(exc)) from None
        if pub != identity.public_raw:
            raise KeyFileError(f"{pub_path} does not belong to {pem_path} (fingerprints "
                               f"{fingerprint(pub)} and {identity.fingerprint})")
    return identity


def load_or_create_identity(pki_dir: str, name: str, *, durable: bool = True) -> tuple[Identity, bool]:
    """Load the key pair, generating and saving it on first start.  Returns (identity, created)."""
    pem_path, _ = key_paths(pki_dir, name)
    if os.path.lexists(pem_path):
        return load_identity(pki_dir, name), False
    identity = Identity.generate()
    save_identity(identity, pki_dir, name, durable=durable)
    return identity, True
