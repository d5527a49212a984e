"""Client keys: how a local user proves to the master that it may publish.

The master keeps one random 32-byte key per allowed local user in ``<cachedir>/.<user>_key``
(Salt's file name; hex text, mode 0600, owned by that user so that only it and the master's user
can read it).  A publishing client never sends the key: it sends a proof, an HMAC-SHA256 under
the key over (user, timestamp, nonce, the exact request body).  The master recomputes it with the
key of the claimed user, checks the timestamp, and claims the nonce once in its shared store, so
a proof cannot be replayed nor moved to another request or user.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any

from runtime.crypt.errors import BadMessage, KeyFileError, ReplayRefused
from runtime.crypt.replay import DEFAULT_MAX_SKEW_MS, check_fresh, now_ms
from runtime.crypt.transcript import transcript
from runtime.private_files import PrivateFileError, ensure_private_dir, read_private, write_private

CLIENT_KEY_SIZE = 32
PROOF_NONCE_SIZE = 16


def client_key_path(cachedir: str, user: str) -> str:
    if not user or "/" in user or "\0" in user or user in (".", ".."):
        raise ValueError(f"invalid user name {user!r}")
    return os.path.join(cachedir, f".{user}_key")


def load_client_key(path: str) -> bytes:
    try:
        text = read_private(path, max_size=1024).strip()
    except PrivateFileError as exc:
        raise KeyFileError(str(exc)) from None
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != CLIENT_KEY_SIZE:
        raise KeyFileError(f"{path}: not a saltpan client key (expected {2 * CLIENT_KEY_SIZE} hex digits)")
    return key


def load_or_create_client_key(path: str) -> bytes:
    """The key in ``path``, generated (0600, directory 0700) when missing."""
    if os.path.lexists(path):
        return load_client_key(path)
    ensure_private_dir(os.path.dirname(os.path.abspath(path)))
    key = os.urandom(CLIENT_KEY_SIZE)
    write_private(path, key.hex().encode() + b"\n")
    return key


def _mac(key: bytes, user: str, ts: int, nonce: bytes, body: bytes) -> bytes:
    return hmac.new(key, transcript("client-proof", user, ts, nonce, body), hashlib.sha256).digest()


def make_proof(key: bytes, user: str, body: bytes, *, now: int | None = None) -> dict[str, Any]:
    """``{"user", "ts", "nonce", "mac"}`` for sending beside ``body`` (the packed request)."""
    ts = now_ms() if now is None else now
    nonce = os.urandom(PROOF_NONCE_SIZE)
    return {"user": user, "ts": ts, "nonce": nonce, "mac": _mac(key, user, ts, nonce, body)}


def verify_proof(key: bytes, proof: Any, body: bytes, *, now: int | None = None,
                 max_skew_ms: int = DEFAULT_MAX_SKEW_MS, not_before_ms: int = 0) -> tuple[str, bytes]:
    """Check a proof made with ``key``; return ``(user, nonce)``.  The caller must then claim the
    nonce once in the shared store (``SessionStore.claim_nonce``).  ``not_before_ms`` is
    the master's start: a proof made earlier is ``stale`` even within the clock window (a capture
    replayed after a restart).  Raises ``BadMessage`` (``bad_proof``) or ``ReplayRefused``
    (``stale``/``future``)."""
    if not isinstance(proof, dict) or set(proof) != {"user", "ts", "nonce", "mac"}:
        raise BadMessage("client proof must have exactly user, ts, nonce and mac", "bad_proof")
    user, ts, nonce, mac = proof["user"], proof["ts"], proof["nonce"], proof["mac"]
    if (not isinstance(user, str) or not isinstance(ts, int) or isinstance(ts, bool)
            or not isinstance(nonce, bytes) or len(nonce) != PROOF_NONCE_SIZE or not isinstance(mac, bytes)):
        raise BadMessage("client proof fields are malformed", "bad_proof")
    if not hmac.compare_digest(mac, _mac(key, user, ts, nonce, body)):
        raise BadMessage(f"client proof for user {user!r} does not verify", "bad_proof")
    check_fresh(ts, now_ms() if now is None else now, max_skew_ms)
    if ts < not_before_ms:
        raise ReplayRefused("client proof was made before this master started (a replay?)", "stale")
    return user, nonce
