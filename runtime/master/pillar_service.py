"""Compile minions' pillar on the master (the `_pillar` request), with the optional pillar cache."""

from __future__ import annotations

import logging
import time
from typing import Any

from runtime import pipeline
from runtime.config import option
from runtime.master.datacache import DataCache, DataTooLarge, Snapshot
from runtime.master.store.errors import StoreUnavailable
from runtime.ratelog import RateLimitedLog

log = logging.getLogger("saltpan.master.pillar")


class PillarService:
    """One per worker process: keeps its compiler (and so its template cache) warm."""

    def __init__(self, opts: dict[str, Any], data: DataCache):
        self.opts = opts
        self.data = data
        self.compiler = pipeline.pillar_compiler(opts)
        # a minion asking for its pillar again and again must not repeat every error in the log
        self.errors_log = RateLimitedLog(log, option(opts, "refusal_log_interval", float))

    def compile(self, minion_id: str, grains: dict[str, Any], saltenv: str | None = None,
                pillarenv: str | None = None, clean_cache: bool = False,
                known: Snapshot | None = None) -> dict[str, Any]:
        """The minion's pillar; with ``pillar_cache``, the copy compiled less than ``pillar_cache_ttl``
        seconds ago unless ``clean_cache`` (saltutil.refresh_pillar) asks for a new compile.
        ``known``: the cache's entries as the request read them (the stored pillar among them)."""
        if option(self.opts, "pillar_cache", bool) and not clean_cache and not saltenv and not pillarenv:
            cached = self._cached(minion_id, known)
            if cached is not None:
                return cached
        grains = dict(grains)
        grains["id"] = minion_id
        result = self.compiler.compile(minion_id, grains, pillarenv=pillarenv, saltenv=saltenv)
        for err in result.errors:
            self.errors_log.error(f"{minion_id}:{err.file}:{err.line}:{err.kind}", "pillar for minion %s: %s",
                                  minion_id, err)
        pillar = result.pillar
        try:
            # with pillar_cache, each compile restarts pillar_cache_ttl: written even when unchanged
            self.data.store(minion_id, "pillar", pillar, unless_same=not option(self.opts, "pillar_cache", bool),
                            known=known)
        except (DataTooLarge, StoreUnavailable) as exc:   # sent to the minion all the same; only the cache goes without
            self.errors_log.warning(f"{minion_id}:{exc.reason}", "pillar for minion %s not cached: %s", minion_id,
                                    exc.message)
        return pillar

    def _cached(self, minion_id: str, known: Snapshot | None) -> dict[str, Any] | None:
        """The minion's pillar compiled less than pillar_cache_ttl ago, if the cache has it (a
        data cache out of reach means a compile, not a refusal)."""
        try:
            if known is None or not known.covers(minion_id, "pillar"):
                known = self.data.snapshot(minion_id, ("pillar",))
        except StoreUnavailable:
            return None
        updated = known.updated("pillar")
        if updated is None or time.time() - updated >= option(self.opts, "pillar_cache_ttl", float):
            return None
        cached = known.value("pillar")
        return cached if isinstance(cached, dict) else None
