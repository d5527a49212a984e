"""The master's GitfsUpdate process: fetch each git remote when its update interval has passed.

Salt's master runs a FileserverUpdate process for gitfs and updates git_pillar in its
maintenance loop; saltpan fetches both here, in a process of its own, so that a remote that
takes a minute to time out delays neither presence nor key rotation (runtime.master.maintenance),
and no worker ever fetches while answering a minion.  Workers and minions see a fetch as soon as
it ends: readers reopen a clone whose ``fetched.json`` changed.

* A remote is due when its ``update_interval`` (``gitfs_update_interval``,
  ``git_pillar_update_interval``, or per remote) has passed since its last fetch was tried;
  the first pass, at start, fetches every remote not fetched within its interval.
* One fetch per repository at a time across processes (its ``flock``): a ``saltpan fileserver
  update`` answered by a worker, or a ``saltpan compile --fetch``, running at the same moment
  waits for this one and does not fetch again.
* A failure is logged naming the remote, and that remote keeps serving its last good revision;
  the other remotes are fetched as usual.
* After a pass that fetched gitfs remotes, ``salt/fileserver/gitfs/update`` is fired when
  ``fileserver_events`` is true (as Salt does).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import zmq

from runtime.config import option
from runtime.events import EventPusher
from runtime.gitfs import update as gitfs_update
from runtime.gitfs.remotes import GITFS, GitConfigError

log = logging.getLogger("saltpan.master.gitfs")

TICK = 1.0  # seconds between looks at which remote is due (intervals are whole seconds, at least 1)


def update_pass(opts: dict[str, Any], events: EventPusher | None) -> list[gitfs_update.FetchResult]:
    """Fetch the remotes that are due; log and announce what happened."""
    results = gitfs_update.update(opts, only_due=True)
    gitfs_update.log_results(results, log)
    if events is not None and option(opts, "fileserver_events", bool) and any(
            r.remote.role == GITFS for r in results):
        events.fire(gitfs_update.GITFS_UPDATE_TAG, gitfs_update.gitfs_event(results))
    return results


def run(opts: dict[str, Any], stop: threading.Event) -> None:
    ctx = zmq.Context()
    events = EventPusher(ctx, opts["sock_dir"])
    try:
        while True:
            try:
                update_pass(opts, events)
            except GitConfigError as exc:   # checked at start: only a changed config file could get here
                log.error("gitfs: %s", exc)
            except Exception:  # noqa: BLE001 - the updater must keep running
                log.exception("gitfs update pass failed")
            if stop.wait(TICK):
                break
    finally:
        events.close()
        ctx.term()
