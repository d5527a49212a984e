"""The Publisher's boot announcement (runtime/crypt/announce.py): when to send it, and what the
master says about its fleet and the rate at which it admits re-authenticating minions.

The Publisher's socket is an XPUB with ``XPUB_VERBOSER``, so every subscriber's subscriptions
reach it, including those a minion's subscriber sends again when it reconnects after a master
restart.  A minion that had a session subscribes to a hint (``hint_topic``: the master's clock in
its last auth reply); a hint older than this run's start makes an announcement due (that minion's
session belonged to an earlier run).  A hint from this run, or a subscriber without one (a minion
that never had a session with this master), makes none: 10,000 new minions launched at once cost
no announcement, where each subscription made one due before (their copies, one per subscriber,
were about a tenth of the launch's CPU).  Due announcements are sent at most once every
``MIN_GAP_S`` (a thousand minions reconnecting at once cost a few announcements, not a thousand),
or less often when so many subscribers listen that this would copy more than ``COPIES_PER_S``
announcements a second (at most ``MAX_GAP_S`` apart), and one is sent when the Publisher starts.
With ``XPUB_VERBOSER`` a subscriber's unsubscription reaches it too when its connection closes, so
the Publisher counts the subscribers to ``ANNOUNCE_TOPIC``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

from runtime.config import option
from runtime.crypt.announce import ANNOUNCE_TOPIC, BOOT_ID_SIZE, Announcement, hinted_ms, seal_announcement
from runtime.crypt.handshake import now_ms
from runtime.crypt.identity import Identity

log = logging.getLogger("saltpan.master.announce")

MIN_GAP_S = 0.05
# Each announcement is copied to every subscriber, and waits in the Publisher's memory for those
# not reading yet (a minion reads its subscriber once authenticated).  10,000 minions launched at
# once made 130 announcements due in their first 12 s: 1.3 million copies, 370 MB in the Publisher.
COPIES_PER_S = 20_000
MAX_GAP_S = 1.0
FLEET_CACHE_S = 2.0
# Hellos a second one core answers, all costs included (the proxy, the key store on disk, two
# SQLite transactions, the Ed25519/X25519 work).  bench/auth_storm.py measures the handler alone at
# 970-2800 auth/s per core on this 2-core machine under load and a 1,000-minion storm at ~1,000
# auth/s on both cores, minions included; 400 keeps a margin for the rest of the master's work.
AUTH_PER_CORE = 400.0


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def admission_rate(opts: dict[str, Any]) -> float:
    """The hellos a second this master tells minions it admits: ``reauth_rate`` when set, else
    ``AUTH_PER_CORE`` times the cores its workers can use (at most ``worker_threads``), never more
    than ``clear_rate_global`` (the proxy would refuse the rest ``busy``)."""
    configured = option(opts, "reauth_rate", float)
    if configured > 0:
        return configured
    workers = max(1, option(opts, "worker_threads", int))
    derived = AUTH_PER_CORE * min(workers, usable_cores())
    return max(1.0, min(derived, option(opts, "clear_rate_global", float)))


def count_accepted(pki_dir: str) -> int:
    """Accepted minion keys (files in ``pki_dir/minions``)."""
    try:
        with os.scandir(os.path.join(pki_dir, "minions")) as entries:
            return sum(1 for entry in entries if not entry.name.startswith("."))
    except OSError:
        return 0


class Announcer:
    """Builds and paces the announcements of one master run."""

    def __init__(self, identity: Identity, started_ms: int, rate: float, fleet: Callable[[], int], *,
                 clock: Callable[[], float] = time.monotonic, boot: bytes | None = None) -> None:
        self.identity = identity
        self.started_ms = started_ms
        self.rate = rate
        self.boot = boot if boot is not None else os.urandom(BOOT_ID_SIZE)
        self._fleet = fleet
        self._fleet_cached: tuple[float, int] | None = None
        self.clock = clock
        self.due = True                      # one at start
        self.last_sent = -MIN_GAP_S
        self.sent = 0
        self.subscribers = 0

    @classmethod
    def from_opts(cls, opts: dict[str, Any], identity: Identity, started_ms: int) -> Announcer:
        pki_dir = str(opts["pki_dir"])
        announcer = cls(identity, started_ms, admission_rate(opts), lambda: count_accepted(pki_dir))
        log.info("announcing boot %s: re-authentication admitted at %.0f hellos/s", announcer.boot.hex()[:8],
                 announcer.rate)
        return announcer

    def fleet(self) -> int:
        current = self.clock()
        if self._fleet_cached is None or current - self._fleet_cached[0] > FLEET_CACHE_S:
            self._fleet_cached = (current, self._fleet())
        return self._fleet_cached[1]

    def gap(self) -> float:
        """The least time between two announcements: ``MIN_GAP_S``, longer with more than
        ``COPIES_PER_S * MIN_GAP_S`` subscribers, at most ``MAX_GAP_S``."""
        return min(MAX_GAP_S, max(MIN_GAP_S, self.subscribers / COPIES_PER_S))

    def note_subscription(self, message: bytes) -> None:
        """An XPUB subscription message: ``\\x01`` + topic subscribes, ``\\x00`` + topic leaves.
        Subscribers to ``ANNOUNCE_TOPIC`` are counted; a hint of a session older than this run
        makes an announcement due."""
        kind, topic = message[:1], message[1:]
        if topic == ANNOUNCE_TOPIC:
            if kind == b"\x01":
                self.subscribers += 1
            elif kind == b"\x00":
                self.subscribers = max(0, self.subscribers - 1)
        elif kind == b"\x01":
            answered = hinted_ms(topic)
            if answered is not None and answered < self.started_ms:
                self.due = True

    def wait_ms(self) -> int | None:
        """How long the Publisher may block before :meth:`take` has something (None: until a
        subscription or a publication arrives)."""
        if not self.due:
            return None
        return max(0, math.ceil((self.last_sent + self.gap() - self.clock()) * 1000))

    def take(self) -> bytes | None:
        """The announcement to send now, or None (none due, or one was sent less than :meth:`gap` ago)."""
        current = self.clock()
        if not self.due or current - self.last_sent < self.gap():
            return None
        self.due = False
        self.last_sent = current
        self.sent += 1
        return seal_announcement(self.identity, Announcement(self.boot, self.started_ms, now_ms(), self.fleet(),
                                                             self.rate))
