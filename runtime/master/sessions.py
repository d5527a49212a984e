"""The master's session state: minion sessions with their replay windows, one-shot nonces (hello
and client proofs), publish key epochs, and the master's start time.

:class:`SessionStore` is the interface the daemons use; the factory (``runtime.master.store``)
builds it.  Atomic operations the security argument relies on, in every backend:

- :meth:`~SessionStore.admit`: session alive + fresh timestamp + counter never seen, then recorded.
- :meth:`~SessionStore.open_session`: insert a session and read the current publish key together.
- :meth:`~SessionStore.revoke`: drop a minion's sessions and start a new publish epoch together,
  so a request admitted before the revocation can only ever see the old key, and none after it.
- :meth:`~SessionStore.publish_key_for`: the current publish key, only for a session that exists.
- :meth:`~SessionStore.claim_nonce`: true once per (scope, nonce) until it expires, across every
  process (and, on PostgreSQL, every master).
- :meth:`~SessionStore.reset` (master start): this master's sessions forgotten, claimed nonces
  kept until they expire, the start time recorded for :meth:`~SessionStore.started_ms`.

Where each part lives (docs/operations.md): a session is bound to the master the minion
authenticated with, and its replay window is checked on every request, so sessions, windows,
publish keys and the start time are the master's own (SQLite in sock_dir) with either
``master_store``; on PostgreSQL the nonces and a registry of which master holds which minion's
sessions (:meth:`~SessionStore.holders`) are shared.
"""

from __future__ import annotations

from typing import Protocol

from runtime.crypt.handshake import SessionKeys
from runtime.crypt.publish import PublishKey


class SessionStore(Protocol):
    def open_session(self, keys: SessionKeys) -> PublishKey:
        """Record a new session (dropping the minion's oldest beyond the limit); the current
        publish key, read in the same transaction."""

    def get_session(self, sid: bytes) -> SessionKeys | None: ...

    def admit(self, sid: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        """Accept (counter, timestamp) for the session once, or raise ``ReplayRefused`` /
        ``UnknownSession``."""

    def drop_session(self, sid: bytes) -> bool: ...

    def minion_sessions(self, minion_id: str) -> list[bytes]:
        """The sids of the minion's sessions on this master, oldest first."""

    def session_count(self) -> int: ...

    def last_seen(self) -> dict[str, int]:
        """Per minion with a session on this master, its newest request (ms): presence."""

    def expire_idle(self, idle_ms: int, now: int | None = None) -> list[str]:
        """Drop sessions idle for ``idle_ms``; the minion ids affected."""

    def claim_nonce(self, scope: str, nonce: bytes, expires_ms: int) -> bool:
        """True the first time (``scope``, ``nonce``) is claimed before it expires, else False."""

    def current_publish_key(self) -> PublishKey: ...

    def next_publication(self) -> tuple[PublishKey, int]:
        """The current publish key and a serial never handed out before in its epoch."""

    def publish_key_for(self, sid: bytes) -> PublishKey:
        """The current publish key for a live session (``UnknownSession`` once revoked)."""

    def rotate_publish_key(self, reason: str, now: int | None = None) -> PublishKey: ...

    def rotate_if_older(self, max_age_ms: int, now: int | None = None) -> PublishKey | None: ...

    def revoke(self, minion_id: str, reason: str = "revoked", now: int | None = None) -> PublishKey:
        """Drop every session of ``minion_id`` and start a new publish epoch, together."""

    def revoke_here(self, minion_id: str, reason: str) -> PublishKey:
        """A revocation another master recorded: this master's sessions of ``minion_id`` go and
        a new publish epoch starts, and nothing is recorded for the others (they know)."""

    def reset(self, now: int | None = None) -> PublishKey:
        """Master start: forget this master's sessions, start a new epoch, record the start."""

    def started_ms(self) -> int:
        """When the running master started (ms), 0 if :meth:`reset` never ran."""

    def share_presence(self, now: int | None = None) -> None:
        """Publish this master's sessions (minion, last seen) where the other masters sharing
        the store see them (:meth:`holders`); nothing to do for a single master's store."""

    def holders(self) -> dict[str, tuple[str, int]]:
        """Per minion with a session on any master sharing the store: (master id, last seen
        ms) of its most recently seen session."""

    def close(self) -> None: ...
