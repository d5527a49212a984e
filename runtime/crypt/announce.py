"""The master's boot announcement: how minions learn at once that their master restarted.

The Publisher sends it on the publish port, topic ``ANNOUNCE_TOPIC``, whenever a subscriber
(re)subscribes with a hint of a session with an earlier run of the master (the PUB socket is an
XPUB that sees subscriptions; :func:`hint_topic`), so a minion hears it within a few hundred
milliseconds of its subscriber reconnecting to a restarted master.

Wire form (frame 2; frame 1 is the topic): msgpack ``{"a": <body>, "sig": <64 bytes>}`` where
``body`` is msgpack ``{"v", "boot", "started", "ts", "fleet", "rate"}`` and ``sig`` is the
master's Ed25519 signature over ``transcript("announcement", body)``:

- ``boot``: 16 random bytes drawn at every master start (the boot identity);
- ``started``: when that master started, ms on its clock (the session store's start time);
- ``ts``: when this announcement was made, ms on the master's clock;
- ``fleet``: the number of accepted minion keys;
- ``rate``: the hellos a second the master's workers can answer.

A minion spreads its re-authentication over ``fleet / rate`` seconds (:meth:`Announcement.spread_s`).
What a minion does with an announcement (and why replays do no harm) is in
``runtime/minion/watch.py`` and docs/protocol.md §6.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.errors import CryptoError, ReplayRefused
from runtime.crypt.handshake import now_ms
from runtime.crypt.identity import Identity, verify_signature
from runtime.crypt.replay import check_fresh

ANNOUNCE_TOPIC = b"master"
# A minion's subscriber also subscribes to ``HINT_PREFIX`` + the master's clock in its last auth
# reply (8 bytes, big-endian).  Nothing is ever published under it: the subscription only tells the
# Publisher's XPUB that this subscriber had a session with the run of the master that answered
# then, and so needs an announcement if that was an earlier run (:func:`hinted_ms`).
HINT_PREFIX = ANNOUNCE_TOPIC + b"@"
BOOT_ID_SIZE = 16
DEFAULT_MAX_AGE_MS = 300_000
MAX_SPREAD_S = 600.0       # whatever a master announces, a minion never waits longer than this
_LIMITS = codec.Limits(max_size=1024, max_items=16, max_depth=2)
_FIELDS = {"v", "boot", "started", "ts", "fleet", "rate"}


class AnnouncementRefused(CryptoError):
    """An announcement a minion ignores (malformed, not signed by its master, stale)."""

    reason = "bad_announcement"


@dataclass(frozen=True)
class Announcement:
    boot: bytes
    started_ms: int
    ts_ms: int
    fleet: int
    rate: float

    def spread_s(self) -> float:
        """The window a minion spreads its re-authentication over: the announced fleet at the
        announced rate (0 for an empty fleet), at most ``MAX_SPREAD_S``."""
        if self.fleet <= 0:
            return 0.0
        return min(MAX_SPREAD_S, self.fleet / self.rate)


def seal_announcement(identity: Identity, announcement: Announcement) -> bytes:
    body = codec.pack({"v": aead.PROTOCOL_VERSION, "boot": announcement.boot, "started": announcement.started_ms,
                       "ts": announcement.ts_ms, "fleet": announcement.fleet, "rate": float(announcement.rate)})
    return codec.pack({"a": body, "sig": identity.sign(aead.transcript("announcement", body))})


def hint_topic(answered_ms: int) -> bytes:
    """The subscription that tells the master "you last answered me at ``answered_ms``"."""
    return HINT_PREFIX + max(0, answered_ms).to_bytes(8, "big")


def hinted_ms(topic: bytes) -> int | None:
    """The time a hint subscription carries, or None when ``topic`` is not one."""
    if len(topic) != len(HINT_PREFIX) + 8 or not topic.startswith(HINT_PREFIX):
        return None
    return int.from_bytes(topic[len(HINT_PREFIX):], "big")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def peek_announcement(data: bytes) -> tuple[bytes, int] | None:
    """``(boot, started)`` as an announcement claims them, NOT verified, or None when it is not
    readable.  Only for deciding that one need not be verified: a minion that already acted on
    that boot, or heard from its master after that start, would ignore it verified or not, so a
    forged claim can do no more than a dropped message.  (A thousand minions on one host each
    verifying every announcement the publisher sends while they reconnect cost seconds of CPU.)"""
    try:
        outer = codec.unpack(data, _LIMITS)
        fields = codec.unpack(outer["a"], _LIMITS) if isinstance(outer, dict) and isinstance(outer.get("a"), bytes) \
            else None
    except codec.DecodeError:
        return None
    if not isinstance(fields, dict):
        return None
    boot, started = fields.get("boot"), fields.get("started")
    if not isinstance(boot, bytes) or not isinstance(started, int) or isinstance(started, bool):
        return None
    return boot, started


def open_announcement(master_pub: bytes, data: bytes, *, clock_offset_ms: int = 0, now: int | None = None,
                      max_age_ms: int = DEFAULT_MAX_AGE_MS) -> Announcement:
    """Verify one announcement against the trusted master key, or raise AnnouncementRefused."""
    try:
        outer = codec.unpack(data, _LIMITS)
    except codec.DecodeError as exc:
        raise AnnouncementRefused(f"announcement: {exc}", "malformed") from None
    if not isinstance(outer, dict) or set(outer) != {"a", "sig"} or not isinstance(outer["a"], bytes) \
            or not isinstance(outer["sig"], bytes):
        raise AnnouncementRefused("an announcement is a map of a and sig (byte strings)", "malformed")
    body = outer["a"]
    if not verify_signature(master_pub, outer["sig"], aead.transcript("announcement", body)):
        raise AnnouncementRefused("announcement is not signed by the trusted master key", "bad_signature")
    try:
        fields = codec.unpack(body, _LIMITS)
    except codec.DecodeError as exc:
        raise AnnouncementRefused(f"announcement body: {exc}", "malformed") from None
    if not isinstance(fields, dict) or set(fields) != _FIELDS or fields["v"] != aead.PROTOCOL_VERSION:
        raise AnnouncementRefused("announcement body has unexpected fields or version", "malformed")
    boot, started, ts, fleet, rate = (fields["boot"], fields["started"], fields["ts"], fields["fleet"],
                                      fields["rate"])
    if not (isinstance(boot, bytes) and len(boot) == BOOT_ID_SIZE and _is_int(started) and _is_int(ts)
            and _is_int(fleet) and fleet >= 0 and isinstance(rate, float) and math.isfinite(rate) and rate > 0
            and 0 <= started <= ts):
        raise AnnouncementRefused("announcement fields are out of range", "malformed")
    try:
        check_fresh(ts, (now_ms() if now is None else now) + clock_offset_ms, max_age_ms)
    except ReplayRefused as exc:
        raise AnnouncementRefused(f"announcement refused: {exc}", exc.reason) from None
    return Announcement(boot, started, ts, fleet, rate)
