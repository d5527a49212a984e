"""The auth handshake: a signed minion hello, a signed master reply, per-session keys.

Minion                                              Master
  start_auth() -> hello {id, pub, eph, nonce, ts, sig}  ->  verify_hello()
                                                             (key store decides the outcome)
  finish_auth() <- reply {outcome, ..., sealed, sig}    <-  answer_hello()

- The hello is signed with the minion's identity key over (v, id, pub, eph, nonce, ts): proof
  that the sender holds the key it asks to be accepted with, and that ``eph`` is its own.
- Every outcome (accepted, pending, rejected, denied, refused) is answered with a reply signed by
  the master over a transcript that includes the SHA-256 of the hello, so an old or forged reply
  cannot be passed off as the answer to this hello.
- On ``accepted`` the reply carries the master's ephemeral X25519 key and a session id; both
  sides derive ``c2s`` and ``s2c`` keys with HKDF-SHA256 from the X25519 secret, salted with the
  hash of the hello and reply transcripts, with the minion id and session id in ``info``.  The
  grant (heartbeat period, current publish key and epoch, extras) travels ``sealed`` under
  ``s2c`` with counter 0; requests and replies use counters from 1 (see ``channel``).
- ``ts`` is milliseconds on the master's clock as the minion estimates it; a refusal for clock
  skew carries the master's time so the minion can correct its offset and retry at once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.ed25519_strict import public_key_problem
from runtime.crypt.errors import AuthReplyError, BadMessage, HelloError
from runtime.crypt.identity import PUBLIC_KEY_SIZE, SIGNATURE_SIZE, Identity, verify_signature
from runtime.crypt.replay import now_ms as now_ms  # the protocol's clock, read by its callers from here

AUTH_CMD = "_auth"
OUTCOMES = ("accepted", "pending", "rejected", "denied", "refused")
NONCE_SIZE = 32
SESSION_ID_SIZE = 16
MAX_ID_BYTES = 255
DEFAULT_HELLO_SKEW_MS = 300_000
GRANT_LIMITS = codec.Limits(max_size=64 * 1024, max_items=1024, max_depth=8)

_HELLO_KEYS = {"cmd", "v", "id", "pub", "eph", "nonce", "ts", "sig"}
_REPLY_KEYS = {"v", "outcome", "reason", "id", "nonce", "hello_hash", "master_pub", "now", "sid", "eph",
               "sealed", "sig"}


def _usable_id(minion_id: Any) -> bool:
    if not isinstance(minion_id, str) or not minion_id:
        return False
    try:
        return len(minion_id.encode("utf-8")) <= MAX_ID_BYTES
    except UnicodeEncodeError:
        return False


@dataclass(frozen=True)
class SessionKeys:
    """One authenticated session: ``c2s`` seals minion->master requests, ``s2c`` master->minion."""

    sid: bytes
    minion_id: str
    c2s: bytes
    s2c: bytes
    created_ms: int

    def __repr__(self) -> str:
        return f"SessionKeys(sid={self.sid.hex()}, minion_id={self.minion_id!r})"


@dataclass(frozen=True)
class AuthGrant:
    """What an accepted minion learns inside its session: heartbeat period, publish key, extras."""

    heartbeat_s: float
    publish_epoch: int
    publish_key: bytes
    extra: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"heartbeat": float(self.heartbeat_s), "epoch": self.publish_epoch, "publish_key": self.publish_key,
                "extra": self.extra}

    @classmethod
    def from_wire(cls, data: Any) -> AuthGrant:
        if not isinstance(data, dict):
            raise AuthReplyError("sealed grant is not a map")
        hb, epoch, key, extra = data.get("heartbeat"), data.get("epoch"), data.get("publish_key"), data.get("extra")
        if (not isinstance(hb, (int, float)) or isinstance(hb, bool) or not 0 < hb <= 86400
                or not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1
                or not isinstance(key, bytes) or len(key) != aead.KEY_SIZE or not isinstance(extra, dict)):
            raise AuthReplyError("sealed grant has missing or malformed fields")
        return cls(float(hb), epoch, key, extra)

    def __repr__(self) -> str:
        return f"AuthGrant(heartbeat_s={self.heartbeat_s}, publish_epoch={self.publish_epoch})"


# ---------------------------------------------------------------- minion side: the hello

@dataclass(frozen=True, eq=False)
class AuthAttempt:
    """The minion's private state for one hello; ``load`` is what goes on the wire."""

    identity: Identity
    minion_id: str
    eph_private: X25519PrivateKey
    nonce: bytes
    ts_ms: int
    hello_transcript: bytes
    load: dict[str, Any]


def _hello_transcript(v: int, minion_id: str, pub: bytes, eph: bytes, nonce: bytes, ts: int) -> bytes:
    return aead.transcript("hello", v, minion_id, pub, eph, nonce, ts)


def _raw_x25519(key: X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def start_auth(identity: Identity, minion_id: str, *, clock_offset_ms: int = 0,
               now: int | None = None) -> AuthAttempt:
    """Build a fresh signed hello (new ephemeral key and nonce every call: never resend one)."""
    if not _usable_id(minion_id):
        raise ValueError(f"minion id must be a non-empty UTF-8 string of at most {MAX_ID_BYTES} bytes")
    eph_private = X25519PrivateKey.generate()
    eph = _raw_x25519(eph_private)
    nonce = os.urandom(NONCE_SIZE)
    ts = (now_ms() if now is None else now) + clock_offset_ms
    hello_transcript = _hello_transcript(aead.PROTOCOL_VERSION, minion_id, identity.public_raw, eph, nonce, ts)
    load = {"cmd": AUTH_CMD, "v": aead.PROTOCOL_VERSION, "id": minion_id, "pub": identity.public_raw,
            "eph": eph, "nonce": nonce, "ts": ts, "sig": identity.sign(hello_transcript)}
    return AuthAttempt(identity, minion_id, eph_private, nonce, ts, hello_transcript, load)


# ---------------------------------------------------------------- master side

@dataclass(frozen=True)
class Hello:
    """A hello whose fields are well formed (``verified`` once its signature checked out)."""

    minion_id: str
    pub: bytes
    eph: bytes
    nonce: bytes
    ts_ms: int
    transcript: bytes
    verified: bool

    @property
    def hello_hash(self) -> bytes:
        return hashlib.sha256(self.transcript).digest()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_hello(load: Any) -> Hello:
    """Check field names, types and sizes (no signature yet).  :class:`HelloError` ``malformed``."""
    if not isinstance(load, dict) or set(load) != _HELLO_KEYS:
        raise HelloError("auth hello must have exactly the fields " + ", ".join(sorted(_HELLO_KEYS)), "malformed")
    if load["cmd"] != AUTH_CMD:
        raise HelloError("not an auth hello", "malformed")
    if load["v"] != aead.PROTOCOL_VERSION or not _is_int(load["v"]):
        raise HelloError(f"protocol version {load['v']!r} is not supported (this master speaks "
                         f"{aead.PROTOCOL_VERSION})", "unsupported_version")
    minion_id = load["id"]
    if not _usable_id(minion_id):
        raise HelloError("minion id must be a non-empty UTF-8 string of at most 255 bytes", "malformed")
    for name, size in (("pub", PUBLIC_KEY_SIZE), ("eph", 32), ("nonce", NONCE_SIZE), ("sig", SIGNATURE_SIZE)):
        if not isinstance(load[name], bytes) or len(load[name]) != size:
            raise HelloError(f"field {name!r} must be {size} bytes", "malformed")
    if not _is_int(load["ts"]) or not 0 <= load["ts"] < 2 ** 62:
        raise HelloError("field 'ts' must be milliseconds since the epoch", "malformed")
    transcript = _hello_transcript(load["v"], minion_id, load["pub"], load["eph"], load["nonce"], load["ts"])
    return Hello(minion_id, load["pub"], load["eph"], load["nonce"], load["ts"], transcript, False)


def verify_hello(load: Any, *, now: int | None = None, max_skew_ms: int = DEFAULT_HELLO_SKEW_MS,
                 not_before_ms: int = 0) -> Hello:
    """Parse, check the clock, the key and the signature.  On refusal, :class:`HelloError`
    carries ``.hello`` (the parsed hello, or None when malformed) so that :func:`answer_hello`
    can still send a signed refusal bound to it.

    ``not_before_ms`` is the master's start time: a hello timestamped earlier was made for a
    previous run of the master (captured and replayed after a restart, when the store of claimed
    nonces may be gone) and is refused ``clock_skew``; the refusal carries the master's time, so
    an honest minion whose estimate lagged corrects it and retries at once."""
    hello = parse_hello(load)
    current = now_ms() if now is None else now
    if abs(hello.ts_ms - current) > max_skew_ms:
        raise HelloError(f"hello timestamp is {(hello.ts_ms - current) / 1000:+.1f} s from the master's clock "
                         f"(limit {max_skew_ms / 1000:g} s)", "clock_skew", hello)
    if hello.ts_ms < not_before_ms:
        raise HelloError(f"hello timestamp is {(not_before_ms - hello.ts_ms) / 1000:.1f} s before this master "
                         "started (made for an earlier run: a replay, or a clock estimate to correct)",
                         "clock_skew", hello)
    key_problem = public_key_problem(hello.pub)
    if key_problem is not None:  # a small-order key verifies "universal" signatures: refuse it first
        raise HelloError(f"hello key refused: {key_problem}", "bad_key", hello)
    if not verify_signature(hello.pub, load["sig"], hello.transcript):
        raise HelloError("hello signature does not verify with the public key it carries", "bad_signature", hello)
    return Hello(hello.minion_id, hello.pub, hello.eph, hello.nonce, hello.ts_ms, hello.transcript, True)


def _reply_core(outcome: str, reason: str, minion_id: str, nonce: bytes, hello_hash: bytes, master_pub: bytes,
                now: int, sid: bytes | None, eph: bytes | None) -> bytes:
    return aead.transcript("reply", aead.PROTOCOL_VERSION, outcome, reason, minion_id, nonce, hello_hash,
                           master_pub, now, sid, eph)


def _derive(shared: bytes, hello_transcript: bytes, core: bytes, minion_id: str, sid: bytes) -> tuple[bytes, bytes]:
    salt = hashlib.sha256(hello_transcript + core).digest()
    okm = aead.hkdf(shared, salt, aead.transcript("session keys", minion_id, sid), 2 * aead.KEY_SIZE)
    return okm[:aead.KEY_SIZE], okm[aead.KEY_SIZE:]


def answer_hello(identity: Identity, hello: Hello, outcome: str, *, reason: str = "",
                 grant: AuthGrant | Callable[[SessionKeys], AuthGrant] | None = None,
                 now: int | None = None) -> tuple[dict[str, Any], SessionKeys | None]:
    """The master's signed reply to ``hello``; for ``accepted`` also the new :class:`SessionKeys`.

    ``accepted`` needs a verified hello and a grant.  Pass the grant as a callable to have it
    called with the session keys before anything is sealed: that is where the master records the
    session and reads the current publish key in one transaction
    (``SessionStore.open_session``).  If the minion's ephemeral key is unusable the reply
    is ``refused`` (``bad_ephemeral_key``) and no session is made.
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown auth outcome {outcome!r}")
    current = now_ms() if now is None else now
    if outcome != "accepted":
        core = _reply_core(outcome, reason, hello.minion_id, hello.nonce, hello.hello_hash, identity.public_raw,
                           current, None, None)
        return _signed_reply(identity, hello, outcome, reason, current, core, None, None, None), None
    if not hello.verified or grant is None:
        raise ValueError("an accepted reply needs a verified hello and a grant")
    eph_private = X25519PrivateKey.generate()
    try:
        shared = eph_private.exchange(X25519PublicKey.from_public_bytes(hello.eph))
    except ValueError:  # a low-order point: refuse rather than derive a key everyone knows
        return answer_hello(identity, hello, "refused", reason="bad_ephemeral_key", now=current)
    sid = os.urandom(SESSION_ID_SIZE)
    eph = _raw_x25519(eph_private)
    core = _reply_core(outcome, reason, hello.minion_id, hello.nonce, hello.hello_hash, identity.public_raw,
                       current, sid, eph)
    c2s, s2c = _derive(shared, hello.transcript, core, hello.minion_id, sid)
    keys = SessionKeys(sid, hello.minion_id, c2s, s2c, current)
    the_grant = grant(keys) if callable(grant) else grant
    sealed = aead.seal(s2c, aead.DOMAIN_S2C, 0, codec.pack(the_grant.to_wire()), core)
    return _signed_reply(identity, hello, outcome, reason, current, core, sid, eph, sealed), keys


def _signed_reply(identity: Identity, hello: Hello, outcome: str, reason: str, current: int, core: bytes,
                  sid: bytes | None, eph: bytes | None, sealed: bytes | None) -> dict[str, Any]:
    sig = identity.sign(aead.transcript("reply-sig", core, sealed))
    return {"v": aead.PROTOCOL_VERSION, "outcome": outcome, "reason": reason, "id": hello.minion_id,
            "nonce": hello.nonce, "hello_hash": hello.hello_hash, "master_pub": identity.public_raw, "now": current,
            "sid": sid, "eph": eph, "sealed": sealed, "sig": sig}


# ---------------------------------------------------------------- minion side: the reply

@dataclass(frozen=True)
class AuthResult:
    """A verified auth reply.  ``session``/``grant`` only when ``outcome == "accepted"``.

    ``clock_offset_ms`` is the master's clock minus ours (add it to local time for ``ts``)."""

    outcome: str
    reason: str
    master_pub: bytes
    master_now_ms: int
    clock_offset_ms: int
    session: SessionKeys | None
    grant: AuthGrant | None


class MasterKeyCheck(Protocol):
    """What :func:`finish_auth` needs from the minion's trust store (``runtime.crypt.trust.MasterTrust``)."""

    def check(self, master_pub: bytes) -> None:
        """Raise ``MasterKeyMismatch`` unless ``master_pub`` may be trusted."""

    def remember(self, master_pub: bytes) -> None:
        """Called once the reply's signature verified: trust on first use."""


def finish_auth(attempt: AuthAttempt, reply: Any, trust: MasterKeyCheck, *, now: int | None = None) -> AuthResult:
    """Verify the master's reply to ``attempt``.

    Raises :class:`AuthReplyError` for anything not a correctly signed answer to this very hello
    (ignore it and retry later) and ``MasterKeyMismatch`` (from ``trust``) when the master's key is
    not the trusted or pinned one.  The master key is remembered (trust on first use) only after
    its signature verified.
    """
    if not isinstance(reply, dict):
        raise AuthReplyError("auth reply is not a map")
    if "error" in reply and set(reply) == {"error"}:
        err = reply["error"] if isinstance(reply["error"], dict) else {}
        raise AuthReplyError(f"master refused the hello without signing: {str(err.get('message'))[:200]}",
                             "unsigned_refusal")
    if set(reply) != _REPLY_KEYS:
        raise AuthReplyError("auth reply has unexpected fields")
    outcome, reason, master_pub, master_now = reply["outcome"], reply["reason"], reply["master_pub"], reply["now"]
    sid, eph, sealed, sig = reply["sid"], reply["eph"], reply["sealed"], reply["sig"]
    if (reply["v"] != aead.PROTOCOL_VERSION or outcome not in OUTCOMES or not isinstance(reason, str)
            or not isinstance(master_pub, bytes) or len(master_pub) != PUBLIC_KEY_SIZE
            or not _is_int(master_now) or not 0 <= master_now < 2 ** 62 or not isinstance(sig, bytes)):
        raise AuthReplyError("auth reply has malformed fields")
    if reply["id"] != attempt.minion_id or reply["nonce"] != attempt.nonce:
        raise AuthReplyError("auth reply answers another hello (id or nonce differ)")
    hello_hash = hashlib.sha256(attempt.hello_transcript).digest()
    if reply["hello_hash"] != hello_hash:
        raise AuthReplyError("auth reply is bound to another hello")
    if outcome == "accepted":
        if not (isinstance(sid, bytes) and len(sid) == SESSION_ID_SIZE and isinstance(eph, bytes) and len(eph) == 32
                and isinstance(sealed, bytes)):
            raise AuthReplyError("accepted reply lacks its session fields")
    elif sid is not None or eph is not None or sealed is not None:
        raise AuthReplyError("only an accepted reply may carry session fields")
    key_problem = public_key_problem(master_pub)
    if key_problem is not None:  # never trust (nor remember) a key anyone can sign for
        raise AuthReplyError(f"master key refused: {key_problem}", "bad_master_key")
    trust.check(master_pub)
    core = _reply_core(outcome, reason, attempt.minion_id, attempt.nonce, hello_hash, master_pub, master_now,
                       sid, eph)
    if not verify_signature(master_pub, sig, aead.transcript("reply-sig", core, sealed)):
        raise AuthReplyError("auth reply signature does not verify", "bad_signature")
    trust.remember(master_pub)
    current = now_ms() if now is None else now
    session = grant = None
    if outcome == "accepted":
        try:
            shared = attempt.eph_private.exchange(X25519PublicKey.from_public_bytes(eph))
        except ValueError:
            raise AuthReplyError("master's ephemeral key is unusable") from None
        c2s, s2c = _derive(shared, attempt.hello_transcript, core, attempt.minion_id, sid)
        try:
            plain = aead.open_sealed(s2c, aead.DOMAIN_S2C, 0, sealed, core)
            grant = AuthGrant.from_wire(codec.unpack(plain, GRANT_LIMITS))
        except (BadMessage, codec.DecodeError) as exc:
            raise AuthReplyError(f"sealed grant does not open: {exc}") from None
        session = SessionKeys(sid, attempt.minion_id, c2s, s2c, current)
    return AuthResult(outcome, reason, master_pub, master_now, master_now - current, session, grant)
