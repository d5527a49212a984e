"""The master's ``_auth`` handler: hello in, signed reply out, key store and sessions updated.

Steps for one hello (``AuthService.handle``):

1. ``verify_hello``: fields, protocol version, clock (``clock_skew`` refusals carry the master's
   time), signature (proof of possession of the key).  A hello too malformed to bind a reply to
   gets an unsigned ``{"error": ...}`` load; every other refusal is signed.
2. The id must be usable as a key file name (``keys.id_problem``).
3. The hello's nonce is claimed once in the shared store: a replayed hello (even one sent to two
   workers at once) is refused ``replayed``.  Claimed nonces outlive a master restart (the store
   keeps them until they expire), and a hello timestamped before the master started is refused
   ``clock_skew`` in step 1 (``SessionStore.started_ms``), so a capture replayed after a restart
   is refused even when the store was lost.
4. ``KeyStore.admit`` decides accepted / pending / rejected / denied / pending_full.
5. Accepted: the session is recorded together with the current publish key, the key store is
   checked again (a key deleted meanwhile drops the new session: ``revoked``), and the reply
   carries the sealed grant.

The caller sends ``AuthDecision.reply`` as ``{"enc": "clear", "load": reply}``, fires
``salt/auth`` with ``AuthDecision.event()`` and logs ``AuthDecision.log_line()`` (no secrets).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime import codec
from runtime.crypt.errors import HelloError, KeyFileError
from runtime.crypt.handshake import (
    DEFAULT_HELLO_SKEW_MS,
    AuthGrant,
    Hello,
    SessionKeys,
    answer_hello,
    now_ms,
    verify_hello,
)
from runtime.crypt.identity import Identity, fingerprint, public_to_pem
from runtime.master.keys import KeyStore, id_problem
from runtime.master.sessions import SessionStore
from runtime.master.store.errors import StoreError

_EVENT_ACT = {"accepted": "accept", "pending": "pend", "rejected": "reject", "denied": "denied"}


@dataclass(frozen=True)
class AuthSettings:
    auto_accept: bool = False
    heartbeat_s: float = 5.0
    # the period told at auth, when it depends on the fleet (runtime.master.heartbeats); else heartbeat_s
    heartbeat_period: Callable[[], float] | None = None
    hello_skew_ms: int = DEFAULT_HELLO_SKEW_MS
    autosign: Callable[[str], bool] | None = None       # e.g. autosign_file globs
    grant_extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuthDecision:
    reply: dict[str, Any]
    outcome: str                  # accepted / pending / rejected / denied / refused
    reason: str                   # refusal reason, "" otherwise
    minion_id: str | None
    public_raw: bytes | None
    session: SessionKeys | None
    detail: str = ""              # for the master's log only, never sent

    def event(self) -> dict[str, Any] | None:
        """Data for a ``salt/auth`` event in Salt's shape, or None for refusals before the key store
        and for ids that could not name a key (``../x``, ``a/b``: never put on the bus, where a
        reactor might use them as a path)."""
        if self.minion_id is None or self.public_raw is None or id_problem(self.minion_id) is not None:
            return None
        act = _EVENT_ACT.get(self.outcome, "full" if self.reason == "pending_full" else "refused")
        return {"result": self.outcome in ("accepted", "pending"), "act": act, "id": self.minion_id,
                "pub": public_to_pem(self.public_raw).decode()}

    def log_line(self) -> str:
        who = repr(self.minion_id) if self.minion_id is not None else "<unparsed hello>"
        key = f" key {fingerprint(self.public_raw)}" if self.public_raw else ""
        why = f" ({self.reason})" if self.reason else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"auth from {who}{key}: {self.outcome}{why}{detail}"


class AuthService:
    def __init__(self, identity: Identity, keys: KeyStore, sessions: SessionStore,
                 settings: AuthSettings | None = None) -> None:
        self.identity = identity
        self.keys = keys
        self.sessions = sessions
        self.settings = settings or AuthSettings()

    def _refuse(self, hello: Hello, reason: str, now: int, verified: bool = True, detail: str = "") -> AuthDecision:
        reply, _ = answer_hello(self.identity, hello, "refused", reason=reason, now=now)
        return AuthDecision(reply, "refused", reason, hello.minion_id if verified else None,
                            hello.pub if verified else None, None, detail)

    def handle(self, load: Any, *, now: int | None = None) -> AuthDecision:
        current = now_ms() if now is None else now
        try:
            hello = verify_hello(load, now=current, max_skew_ms=self.settings.hello_skew_ms,
                                 not_before_ms=self.sessions.started_ms())
        except HelloError as exc:
            if isinstance(exc.hello, Hello):
                return self._refuse(exc.hello, exc.reason, current, verified=False, detail=str(exc))
            return AuthDecision(codec.error_load(exc.reason, str(exc)), "refused", exc.reason, None, None, None,
                                str(exc))
        if id_problem(hello.minion_id) is not None:
            return self._refuse(hello, "invalid_id", current)
        try:
            return self._admit(hello, current)
        except StoreError as exc:
            # the key store or the nonces are out of reach (PostgreSQL down): no key is admitted,
            # the minion is told so (signed) and retries with its backoff
            return self._refuse(hello, exc.reason, current, detail=exc.message)

    def _admit(self, hello: Hello, current: int) -> AuthDecision:
        expires = max(hello.ts_ms, current) + self.settings.hello_skew_ms + 1000
        if not self.sessions.claim_nonce("hello", hello.nonce, expires):
            return self._refuse(hello, "replayed", current)
        auto = self.settings.auto_accept or bool(self.settings.autosign and self.settings.autosign(hello.minion_id))
        try:
            status = self.keys.admit(hello.minion_id, hello.pub, auto_accept=auto)
        except KeyFileError as exc:  # a corrupt or planted file in the key store: refuse, log it
            return self._refuse(hello, "key_store_error", current, detail=str(exc))
        if status == "pending_full":
            return self._refuse(hello, "pending_full", current)
        if status != "accepted":
            reply, _ = answer_hello(self.identity, hello, status, now=current)
            return AuthDecision(reply, status, "", hello.minion_id, hello.pub, None)

        def grant(keys: SessionKeys) -> AuthGrant:
            pkey = self.sessions.open_session(keys)
            period = self.settings.heartbeat_period() if self.settings.heartbeat_period else self.settings.heartbeat_s
            return AuthGrant(period, pkey.epoch, pkey.key, dict(self.settings.grant_extra))

        reply, session = answer_hello(self.identity, hello, "accepted", grant=grant, now=current)
        if session is None:  # refused (bad ephemeral key)
            return AuthDecision(reply, "refused", str(reply.get("reason", "")), hello.minion_id, hello.pub, None)
        try:
            still_accepted = self.keys.is_accepted(hello.minion_id, hello.pub)
        except KeyFileError:
            still_accepted = False
        except StoreError as exc:   # cannot tell: never hand out that grant
            self.sessions.drop_session(session.sid)
            return self._refuse(hello, exc.reason, current, detail=exc.message)
        if not still_accepted:
            # deleted or rejected between admit() and open_session(): never hand out that grant
            self.sessions.drop_session(session.sid)
            return self._refuse(hello, "revoked", current)
        return AuthDecision(reply, "accepted", "", hello.minion_id, hello.pub, session)

