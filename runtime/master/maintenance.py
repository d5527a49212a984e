"""The master's maintenance process: presence, publish key rotation, job cache pruning, and (on a
shared store) this master's sessions in the registry the other masters read.

Presence comes from heartbeats: a minion is present while the master heard from it
within three heartbeat periods.  Every period the master fires
``salt/presence/present`` ({"present": [ids]}), and ``salt/presence/change``
({"new": [...], "lost": [...]}) whenever the set changes.  The present set is also
written to ``cachedir/presence.json`` for ``saltpan minions --status``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any

import zmq

from runtime.config import option
from runtime.events import EventPusher
from runtime.master.heartbeats import effective_period
from runtime.master.store.errors import StoreUnavailable
from runtime.master.store.factory import MasterStores, open_master_stores
from runtime.private_files import write_private
from runtime.ratelog import RateLimitedLog

log = logging.getLogger("saltpan.master.maintenance")

PRESENCE_FILE = "presence.json"
CHANGES_KEEP_S = 86400.0    # changes other masters had a day to read (runtime.master.changes)


def present_minions(last_seen: dict[str, int], now_ms: int, window_ms: float) -> set[str]:
    return {minion for minion, seen in last_seen.items() if now_ms - seen <= window_ms}


def run(opts: dict[str, Any], stop: threading.Event) -> None:
    ctx = zmq.Context()
    events = EventPusher(ctx, opts["sock_dir"])
    stores = open_master_stores(opts)
    store, jobs = stores.sessions, stores.jobs
    period = max(0.2, option(opts, "heartbeat_period", float))
    max_rate = option(opts, "heartbeat_max_rate", float)
    told = period
    window_ms = 3 * period * 1000
    rotate_ms = int(option(opts, "publish_session", float) * 1000)
    keep_seconds = keep_jobs_seconds(opts)
    loop_interval = max(0.2, option(opts, "loop_interval", float))
    present: set[str] = set()
    last_prune = None
    unavailable = RateLimitedLog(log, option(opts, "refusal_log_interval", float))
    try:
        while not stop.wait(period):
            now = int(time.time() * 1000)
            try:
                # three of the longest period a minion may have been told (longer for a big fleet:
                # runtime.master.heartbeats); never shortened while the master runs, as minions keep
                # the period of their session
                told = max(told, effective_period(period, max_rate, store.session_count()))
                window_ms = 3 * told * 1000
                current = present_minions(store.last_seen(), now, window_ms)
                if current != present:
                    new, lost = sorted(current - present), sorted(present - current)
                    if option(opts, "presence_events", bool):
                        events.fire("salt/presence/change", {"new": new, "lost": lost})
                    log.info("presence changed: new %s, lost %s", new, lost)
                    present = current
                if option(opts, "presence_events", bool):
                    events.fire("salt/presence/present", {"present": sorted(present)})
                write_private(os.path.join(opts["cachedir"], PRESENCE_FILE),
                              json.dumps({"present": sorted(present), "updated": now}).encode())
                store.expire_idle(int(window_ms * 20), now)
                if rotate_ms > 0 and store.rotate_if_older(rotate_ms, now) is not None:
                    log.info("publish key rotated (older than publish_session)")
                # what the shared store needs (on PostgreSQL: away at times; the next pass catches up)
                store.share_presence(now)
                if stores.spool.count():
                    hand_over_returns(opts, stores, events)
                if keep_seconds > 0 and (last_prune is None or time.monotonic() - last_prune >= loop_interval):
                    pruned = jobs.prune(keep_seconds / 3600)
                    stores.changes.prune(CHANGES_KEEP_S)
                    last_prune = time.monotonic()
                    if pruned:
                        log.info("pruned %d jobs older than %g s (keep_jobs_seconds)", pruned, keep_seconds)
            except StoreUnavailable as exc:
                unavailable.warning("maintenance", "maintenance pass incomplete: %s", exc.message)
            except Exception:  # noqa: BLE001 - maintenance must keep running
                log.exception("maintenance pass failed")
    finally:
        events.close()
        stores.close()
        ctx.term()


def hand_over_returns(opts: dict[str, Any], stores: MasterStores, events: EventPusher) -> None:
    """Returns kept while the job cache was out of reach go to it now (``runtime.master.spool``)."""
    from runtime.master.handlers.jobs import drain_spool, greedy_target

    stored, refused = drain_spool(stores.spool, stores.jobs, events,
                                  lambda job, minion: greedy_target(stores.keys, stores.data, opts, job, minion))
    if stored:
        log.warning("%d return(s) kept while the job cache was out of reach are in it now", stored)
    for why in refused:
        log.warning("kept return of %s refused by the job cache", why)


def keep_jobs_seconds(opts: dict[str, Any]) -> float:
    """How long jobs stay in the job cache, as Salt reads it: keep_jobs_seconds, unless only the
    older keep_jobs (hours) was changed from its default.  0 keeps jobs forever."""
    seconds = option(opts, "keep_jobs_seconds", float)
    hours = option(opts, "keep_jobs", int)
    if seconds == 86400 and hours != 24:
        seconds = float(hours) * 3600
    return max(0.0, seconds)


def read_presence(cachedir: str) -> set[str]:
    try:
        with open(os.path.join(cachedir, PRESENCE_FILE), encoding="utf-8") as fh:
            return set(json.load(fh).get("present", []))
    except (OSError, ValueError):
        return set()
