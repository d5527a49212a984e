"""Who sent a request, as far as the request proxy can tell at a bounded cost: its lane and flow
(``runtime.transport_fair``).

* A sealed request names its session in the clear header.  The proxy reads the session id only
  from a body laid out exactly as saltpan packs it (then the workers' decoding, which refuses
  duplicate keys, reads the same id or refuses the body), and maps it to its minion with what the
  workers tell it: a worker's reply to an accepted hello or to a sealed request carries the
  session id and minion id (:func:`encode_meta`).  A session the proxy does not
  know yet (the master restarted, or a forged id) is charged to its source address.
* A local client's proof is checked in the proxy with the same function the workers use
  (``verify_proof``) and the user's key from ``cachedir``: a proof that verifies under the
  master's own user's key is the operator's (reserved lane); under another user's key, that
  user's flow; anything else (an unknown user, a wrong MAC, a replayed nonce) the source
  address's flow in the client lane.  The worker checks everything again (the nonce claimed
  once, publisher_acl): the proxy only decides who waits behind whom.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from runtime import codec
from runtime.crypt.channel import HEARTBEAT_MARK, MAX_HEARTBEAT_CT
from runtime.crypt.errors import CryptoError, KeyFileError
from runtime.transport_fair import FlowKey, Lane

SESSION_ID_SIZE = 16


def _sealed_prefixes() -> tuple[bytes, bytes]:
    """The bytes before a sealed request's header length, and between the header's map size (its
    first byte) and the session id."""
    marker = b"\xa5" * SESSION_ID_SIZE
    header = codec.pack({"v": 1, "sid": marker, "ctr": 1, "ts": 1})
    body = codec.pack({"enc": codec.ENC_AES, "load": {"h": header, "ct": b""}})
    at_header = body.index(header)
    at_sid = header.index(marker)
    assert body[at_header - 2] == 0xC4 and len(header) < 256, "a sealed header is a bin8"
    return body[:at_header - 1], header[1:at_sid]


_BEFORE_LENGTH, _BEFORE_SID = _sealed_prefixes()
_PLAIN_HEADER, _MARKED_HEADER = 0x84, 0x85      # fixmap of 4 entries; of 5 with the heartbeat's mark last
_HEARTBEAT_MARK = b"".join(codec.pack(part) for entry in HEARTBEAT_MARK.items() for part in entry)
# a heartbeat's ciphertext and what is around it: the envelope's keys, the header (some 60 bytes)
MAX_HEARTBEAT_BODY = MAX_HEARTBEAT_CT + 128


def session_id(body: bytes | memoryview) -> bytes | None:
    """The session id of a sealed request packed as saltpan packs it, else None."""
    return sealed_head(body)[0]


def sealed_head(body: bytes | memoryview) -> tuple[bytes | None, bool]:
    """The session id of a sealed request packed as saltpan packs it (else None), and whether it
    is marked as a heartbeat: its header ends with the mark (``runtime.crypt.channel``) and the
    whole body is a heartbeat's size.  The workers' decoding reads the same id and mark, or refuses
    the body; and refuses a marked request that is larger or is not a heartbeat."""
    start = len(_BEFORE_LENGTH) + 1
    at_sid = start + 1 + len(_BEFORE_SID)
    if len(body) < at_sid + SESSION_ID_SIZE or bytes(body[:len(_BEFORE_LENGTH)]) != _BEFORE_LENGTH:
        return None, False
    kind = body[start]
    if kind not in (_PLAIN_HEADER, _MARKED_HEADER) or bytes(body[start + 1:at_sid]) != _BEFORE_SID:
        return None, False
    marked = False
    if kind == _MARKED_HEADER and len(body) <= MAX_HEARTBEAT_BODY:
        end = start + body[start - 1]
        marked = at_sid + SESSION_ID_SIZE + len(_HEARTBEAT_MARK) <= end <= len(body) \
            and bytes(body[end - len(_HEARTBEAT_MARK):end]) == _HEARTBEAT_MARK
    return bytes(body[at_sid:at_sid + SESSION_ID_SIZE]), marked


class SessionDirectory:
    """Session id -> minion id, as the workers reported them (bounded, least recently used out)."""

    def __init__(self, max_sessions: int = 100_000) -> None:
        self.max_sessions = max_sessions
        self._minions: OrderedDict[bytes, str] = OrderedDict()

    def learn(self, sid: bytes, minion_id: str) -> None:
        self._minions[sid] = minion_id
        self._minions.move_to_end(sid)
        while len(self._minions) > self.max_sessions:
            self._minions.popitem(last=False)

    def minion(self, sid: bytes) -> str | None:
        return self._minions.get(sid)

    def __len__(self) -> int:
        return len(self._minions)


def encode_meta(sid: bytes, minion_id: str) -> bytes:
    """What a worker adds to its reply so the proxy learns a session's minion."""
    return sid + minion_id.encode("utf-8", "surrogateescape")


def decode_meta(meta: bytes) -> tuple[bytes, str] | None:
    if len(meta) <= SESSION_ID_SIZE:
        return None
    return meta[:SESSION_ID_SIZE], meta[SESSION_ID_SIZE:].decode("utf-8", "replace")


class ClientProofs:
    """Checks local clients' proofs in the proxy (see the module docstring).  Keys are read from
    ``cachedir`` and kept ``key_ttl_s`` (a missing key too); nonces of verified proofs are
    remembered (bounded) so that a replayed proof is not given a verified lane twice."""

    def __init__(self, cachedir: str, operator: str, *, key_ttl_s: float = 10.0, max_users: int = 256,
                 max_nonces: int = 20_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.cachedir = cachedir
        self.operator = operator
        self.key_ttl_s = key_ttl_s
        self.max_users = max_users
        self.max_nonces = max_nonces
        self.clock = clock
        self._keys: OrderedDict[str, tuple[float, bytes | None]] = OrderedDict()
        self._nonces: OrderedDict[bytes, None] = OrderedDict()

    def _key(self, user: str) -> bytes | None:
        from runtime.crypt.clientkey import client_key_path, load_client_key

        now = self.clock()
        cached = self._keys.get(user)
        if cached is not None and now - cached[0] < self.key_ttl_s:
            return cached[1]
        try:
            key: bytes | None = load_client_key(client_key_path(self.cachedir, user))
        except (KeyFileError, ValueError, OSError):
            key = None
        self._keys[user] = (now, key)
        self._keys.move_to_end(user)
        while len(self._keys) > self.max_users:
            self._keys.popitem(last=False)
        return key

    def verified_user(self, load: dict[Any, Any]) -> str | None:
        """The user whose key made the proof of a clear client load, when it verifies and its
        nonce was not seen; else None."""
        from runtime.crypt.clientkey import verify_proof

        proof, body = load.get("proof"), load.get("body")
        if not isinstance(proof, dict) or not isinstance(body, bytes):
            return None
        user = proof.get("user")
        if not isinstance(user, str) or not user or len(user) > 255:
            return None
        key = self._key(user)
        if key is None:
            return None
        try:
            _, nonce = verify_proof(key, proof, body)
        except CryptoError:
            return None
        if nonce in self._nonces:
            return None
        self._nonces[nonce] = None
        while len(self._nonces) > self.max_nonces:
            self._nonces.popitem(last=False)
        return user

    def flow(self, load: dict[Any, Any] | None, peer: str) -> tuple[Lane, FlowKey]:
        """The lane and flow of a clear client request from ``peer``."""
        user = self.verified_user(load) if load is not None else None
        if user is None:
            return Lane.CLIENT, ("address", peer)
        if user == self.operator:
            return Lane.OPERATOR, ("user", user)
        return Lane.CLIENT, ("user", user)


def current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())
