"""What the master forgets when a minion's key is deleted, rejected or replaced.

An id whose accepted key goes away must take everything learnt under that key with it, or the
next holder of the id inherits it (an attack suite saw a new key's first pillar compiled with
the old holder's cached grains):

* its sessions are dropped and a new publish epoch starts, in one transaction
  (``SessionStore.revoke``: the old holder can neither send requests nor read publications);
* its entries in the minion data cache are flushed: grains, the cached pillar and every other
  bank (mine data when it comes), after the sessions are gone.

A request of the old holder that was admitted before the revocation and stores data after the
flush is caught by the data cache itself: a worker's cache only keeps what it stores while the
minion still has a session (the data cache's ``still_known``: ``runtime.master.datacache``).

On a store shared by several masters (PostgreSQL), ``SessionStore.revoke`` also drops the id's
sessions from the shared registry and records a ``revoke`` change that the other masters act on
(``runtime.master.changes``); the data cache is shared, so one flush serves all.

Called by ``saltpan key`` (and by any other code that changes keys): :func:`forget_minions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.master.store import factory


def loses_identity(action: str, changed: dict[str, list[str]]) -> list[str]:
    """The ids whose accepted key is gone after ``action`` changed ``changed``
    (``{status it came from: [ids]}``): deleted, rejected, or accepted from denied (a new key
    replacing the old one)."""
    if action in ("delete", "reject") or (action == "accept" and changed.get("minions_denied")):
        return sorted({m for ids in changed.values() for m in ids})
    return []


def forget_minions(opts: dict[str, Any], ids: Iterable[str], reason: str) -> None:
    """Revoke the sessions of ``ids`` (rotating the publish key), then flush their data cache.
    Works whether the master runs or not; creates no store that does not exist yet."""
    ids = sorted(set(ids))
    if not ids:
        return
    sessions = factory.existing_session_store(opts)
    if sessions is not None:
        try:
            for minion_id in ids:
                sessions.revoke(minion_id, reason)
        finally:
            sessions.close()
    data = factory.existing_data_cache(opts)
    if data is not None:
        try:
            for minion_id in ids:
                data.flush(minion_id)
        finally:
            data.close()
