"""Publications: jobs broadcast on the publish port, encrypted per epoch and signed by the master.

Wire form: ``{"enc": "aes", "load": {"h": <header>, "ct": <ciphertext>, "sig": <64 bytes>}}``,
header ``{"v", "epoch", "serial", "ts"}`` (msgpack bytes, the AEAD associated data).

- ``ct`` is ChaCha20-Poly1305 under the publish key of ``epoch`` with nonce ``pub || serial``;
  serials count from 1 in each epoch and are handed out atomically by the master's shared store,
  so a nonce never repeats under one key.
- ``sig`` is the master's Ed25519 signature over (header, ciphertext): an accepted minion holds
  the publish key but still cannot forge or alter a publication.
- The publish key of an epoch reaches minions only inside their sessions (auth grant, or a
  ``_publish_key`` request); a new epoch starts whenever a key is deleted or rejected, and
  periodically, so a removed minion cannot read what is published after its removal.

A minion checks, in order: signature (before anything else: an unsigned frame costs one verify
and changes no state), epoch (older: refused; newer: :class:`NeedPublishKey`), decryption,
serial window and timestamp.  Checking the job id against jobs already run is the caller's job.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.errors import BadMessage, NeedPublishKey, PublicationRefused, ReplayRefused
from runtime.crypt.handshake import now_ms
from runtime.crypt.identity import Identity, verify_signature
from runtime.crypt.replay import WINDOW_SIZE, check_fresh, window_admit

DEFAULT_MAX_AGE_MS = 300_000


@dataclass(frozen=True)
class PublishKey:
    epoch: int
    key: bytes
    created_ms: int

    @classmethod
    def generate(cls, epoch: int, now: int | None = None) -> PublishKey:
        return cls(epoch, os.urandom(aead.KEY_SIZE), now_ms() if now is None else now)

    def __repr__(self) -> str:
        return f"PublishKey(epoch={self.epoch})"


def _signed_part(header: bytes, ct: bytes) -> bytes:
    return aead.transcript("publication", header, ct)


def seal_publication(identity: Identity, pkey: PublishKey, serial: int, payload: Any, *,
                     now: int | None = None) -> bytes:
    """Encrypt ``payload`` under ``pkey`` with ``serial`` (unique in the epoch) and sign it."""
    ts = now_ms() if now is None else now
    header = codec.pack({"v": aead.PROTOCOL_VERSION, "epoch": pkey.epoch, "serial": serial, "ts": ts})
    ct = aead.seal(pkey.key, aead.DOMAIN_PUB, serial, codec.pack(payload), header)
    return codec.pack_envelope(codec.ENC_AES, {"h": header, "ct": ct, "sig": identity.sign(_signed_part(header, ct))})


@dataclass(frozen=True)
class Publication:
    epoch: int
    serial: int
    ts_ms: int
    payload: Any


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class PublicationReceiver:
    """A minion's view of the publish channel: the master's key, the current epoch key, and the
    serial window of that epoch.  Thread-safe."""

    def __init__(self, master_pub: bytes, pkey: PublishKey, *, clock_offset_ms: int = 0,
                 max_age_ms: int = DEFAULT_MAX_AGE_MS, window: int = WINDOW_SIZE,
                 limits: codec.Limits = codec.DEFAULT_LIMITS, not_before_ms: int = 0) -> None:
        self.master_pub = master_pub
        self.clock_offset_ms = clock_offset_ms  # master clock minus ours, from the auth reply
        # publications sealed before the session that gave us this key (master clock) are
        # refused: a fresh serial window knows nothing of them, so only this stops the replay
        # of a recent job to a minion that restarted or joined after it was published
        self.not_before_ms = not_before_ms
        self.max_age_ms = max_age_ms
        self.window = window
        self.limits = limits
        self._lock = threading.Lock()
        self._pkey = pkey
        self._hi = 0
        self._bits = 0

    @property
    def epoch(self) -> int:
        return self._pkey.epoch

    def update_key(self, pkey: PublishKey) -> bool:
        """Move to a newer epoch (from a heartbeat or ``_publish_key`` reply); older or equal
        epochs are ignored.  Returns whether the key changed.  After re-authentication use
        :meth:`adopt` instead (the master may have restarted its epochs)."""
        with self._lock:
            if pkey.epoch <= self._pkey.epoch:
                return False
            self._pkey, self._hi, self._bits = pkey, 0, 0
            return True

    def adopt(self, pkey: PublishKey, *, not_before_ms: int = 0) -> None:
        """After (re-)authentication: take the grant's key whatever its epoch number (a master
        whose state was wiped numbers epochs from 1 again).  The serial window is kept only when
        it is the very same key, so re-authenticating never reopens the window to replays; a new
        window starts at ``not_before_ms`` (the master's time at that authentication)."""
        with self._lock:
            if pkey.epoch == self._pkey.epoch and pkey.key == self._pkey.key:
                return
            self._pkey, self._hi, self._bits = pkey, 0, 0
            self.not_before_ms = not_before_ms

    def open(self, data: bytes, *, now: int | None = None) -> Publication:
        """Verify and decrypt one publication, or raise ``PublicationRefused`` (``NeedPublishKey``
        when it is correctly signed under a newer epoch) or ``codec.DecodeError``."""
        env = codec.unpack_envelope(data, self.limits)
        load = env.load
        if env.enc != codec.ENC_AES or set(load) != {"h", "ct", "sig"}:
            raise PublicationRefused("a publication must be an aes envelope of h, ct and sig (clear-text "
                                     "publications are never accepted)", "malformed")
        h, ct, sig = load["h"], load["ct"], load["sig"]
        if not (isinstance(h, bytes) and isinstance(ct, bytes) and isinstance(sig, bytes)):
            raise PublicationRefused("publication fields must be byte strings", "malformed")
        if not verify_signature(self.master_pub, sig, _signed_part(h, ct)):
            raise PublicationRefused("publication is not signed by the trusted master key", "bad_signature")
        try:
            header = codec.unpack(h, codec.HEADER_LIMITS)
        except codec.DecodeError as exc:
            raise PublicationRefused(f"publication header: {exc}", "malformed") from None
        if (not isinstance(header, dict) or set(header) != {"v", "epoch", "serial", "ts"}
                or header["v"] != aead.PROTOCOL_VERSION or not all(_is_int(header[k]) for k in header)
                or header["serial"] < 1 or header["epoch"] < 1):
            raise PublicationRefused("publication header is malformed", "malformed")
        epoch, serial, ts = header["epoch"], header["serial"], header["ts"]
        with self._lock:
            pkey = self._pkey
        if epoch < pkey.epoch:
            raise PublicationRefused(f"publication of epoch {epoch}, older than the current {pkey.epoch}",
                                     "stale_epoch")
        if epoch > pkey.epoch:
            raise NeedPublishKey(f"publication of epoch {epoch}; this minion holds epoch {pkey.epoch}", epoch)
        try:
            plain = aead.open_sealed(pkey.key, aead.DOMAIN_PUB, serial, ct, h)
        except BadMessage as exc:
            raise PublicationRefused(str(exc), "bad_tag") from None
        current = (now_ms() if now is None else now) + self.clock_offset_ms
        if ts < self.not_before_ms:
            raise PublicationRefused(f"publication of {ts} ms was published before this minion's session "
                                     f"began ({self.not_before_ms} ms): a replay", "before_session")
        try:
            check_fresh(ts, current, self.max_age_ms)
            with self._lock:
                if self._pkey is not pkey:  # rotated meanwhile
                    raise PublicationRefused("publish key changed while opening", "stale_epoch")
                self._hi, self._bits = window_admit(self._hi, self._bits, serial, self.window)
        except ReplayRefused as exc:
            raise PublicationRefused(f"publication refused: {exc}", exc.reason) from None
        return Publication(epoch, serial, ts, codec.unpack(plain, self.limits))
