"""Exceptions of the crypto layer.  Each carries a short ``reason`` a server can log and reply with."""

from __future__ import annotations


class CryptoError(Exception):
    """Base class.  ``reason`` is a stable token (``bad_tag``, ``replayed``...), ``str()`` a sentence."""

    reason = "crypto_error"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class KeyFileError(CryptoError):
    """A key file that is missing, unreadable, of the wrong type or unsafe (the message names it)."""

    reason = "key_file"


class BadMessage(CryptoError):
    """A sealed message that is malformed, fails authentication or belongs elsewhere."""

    reason = "bad_message"


class ReplayRefused(CryptoError):
    """A message already seen, too far behind the window, or with a stale or future timestamp.

    ``reason`` is one of ``replayed``, ``too_old``, ``stale``, ``future``."""

    reason = "replayed"


class UnknownSession(CryptoError):
    """The session id is not (or no longer) known: re-authenticate."""

    reason = "unknown_session"


class HelloError(CryptoError):
    """An auth hello the master refuses (malformed, bad signature, clock skew, replay...).

    ``hello`` is the parsed hello when its fields were well formed (so the refusal can be signed
    and bound to it), else None."""

    reason = "bad_hello"

    def __init__(self, message: str, reason: str | None = None, hello: object | None = None) -> None:
        super().__init__(message, reason)
        self.hello = hello


class AuthReplyError(CryptoError):
    """An auth reply the minion must ignore: unsigned, forged, not bound to our hello."""

    reason = "bad_auth_reply"


class MasterKeyMismatch(CryptoError):
    """The master presented a key other than the trusted or pinned one.  Never auto-resolved."""

    reason = "master_key_changed"


class PublicationRefused(CryptoError):
    """A publication a minion must drop: bad signature, stale epoch, replay, undecryptable."""

    reason = "bad_publication"


class NeedPublishKey(PublicationRefused):
    """A correctly signed publication under a newer epoch: fetch the key, then retry it."""

    reason = "need_publish_key"

    def __init__(self, message: str, epoch: int) -> None:
        super().__init__(message)
        self.epoch = epoch


class RemoteRefusal(CryptoError):
    """The peer answered with a clear (unsigned, unauthenticated) error load.

    ``reason`` is the peer's token (``unknown_session``, ``replayed``, ``rate_limited``...).  It
    cannot be trusted, so treat it only as "this request failed": re-authenticate or retry later."""

    reason = "remote_error"
