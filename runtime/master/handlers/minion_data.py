"""What the master keeps about each minion: ``_grains``, ``_pillar`` (compiled for the session's id)
and the Salt mine (``_mine``, ``_mine_get``, ``_mine_delete``, ``_mine_flush``: runtime/master/mine.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from compiler import match
from runtime import protocol
from runtime.config import option, optional_option
from runtime.master import mine
from runtime.master.handlers.context import Refused, WorkerContext
from runtime.master.store.errors import StoreError, StoreUnavailable

if TYPE_CHECKING:
    from runtime.master.datacache import Snapshot
    from runtime.master.pillar_service import PillarService


class MinionDataHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.PillarRequest: "pillar",     # sealed: the minion id comes from the session
        protocol.GrainsUpload: "grains",
        protocol.MineStore: "mine_store",     # sealed: each minion stores and drops its own mine only
        protocol.MineGet: "mine_get",
        protocol.MineDelete: "mine_delete",
        protocol.MineFlush: "mine_flush",
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset({"read_ahead"})
    PILLAR_BANKS = ("grains", "pillar")   # what a _pillar request compares its writes with (and the cached pillar)

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self._pillar: PillarService | None = None   # made at the first _pillar (it loads the compiler)
        self._ahead: dict[str, Snapshot] = {}       # minion id -> its entries, read for this batch's _pillar

    def read_ahead(self, requests: Sequence[tuple[str, protocol.Request[Any]]]) -> None:
        """The stored entries of every minion with a ``_pillar`` request among ``requests`` (a
        worker's batch), in one read instead of one per request; a minion with another request in
        the batch too, which could change them first, is left to read its own.  A read that fails
        is left to each request to make (and report)."""
        self._ahead = {}
        asked = Counter(minion_id for minion_id, _ in requests)
        wanted = [m for m, r in requests if isinstance(r, protocol.PillarRequest) and asked[m] == 1]
        if len(wanted) < 2:
            return
        try:
            self._ahead = self.ctx.data.snapshots(wanted, self.PILLAR_BANKS)
        except StoreError:
            return

    def _store_grains(self, minion_id: str, grains: dict[str, Any], known: Snapshot | None = None) -> None:
        stored = dict(grains)
        stored["id"] = minion_id
        self.ctx.data.store(minion_id, "grains", stored, unless_same=True, known=known)

    def grains(self, minion_id: str, upload: protocol.GrainsUpload) -> protocol.Ok:
        self._store_grains(minion_id, upload.grains)
        return protocol.Ok()

    def pillar(self, minion_id: str, request: protocol.PillarRequest) -> protocol.PillarReply:
        if request.ignored:  # Salt's _pillar load could carry these to ext_pillar; here they are dropped (class 11)
            self.ctx.refusals.warning("aes:_pillar:override", "ignored %s in _pillar from minion %s (override): a "
                                      "minion cannot change what its pillar is compiled from",
                                      ", ".join(request.ignored), minion_id)
        grains = request.grains
        # the minion's grains and pillar as stored, in one read: compared with what this request
        # would write (most often the same), and the cached pillar with pillar_cache
        known: Snapshot | None = None
        try:
            known = self._ahead.pop(minion_id, None) or self.ctx.data.snapshot(minion_id, self.PILLAR_BANKS)
            if grains is not None:
                self._store_grains(minion_id, grains, known)
        except StoreUnavailable as exc:   # the pillar is compiled from the grains sent all the same
            if grains is None:
                raise
            self.ctx.refusals.warning("aes:_pillar:store_unavailable", "grains of minion %s not cached: %s",
                                      minion_id, exc.message)
        if grains is None:
            grains = (known.value("grains") if known is not None else None) or {}
        if self._pillar is None:
            from runtime.master.pillar_service import PillarService

            self._pillar = PillarService(self.ctx.opts, self.ctx.data)
        return protocol.PillarReply(pillar=self._pillar.compile(minion_id, dict(grains), request.saltenv,
                                                                request.pillarenv, clean_cache=request.clean_cache,
                                                                known=known))

    # -- the mine ---------------------------------------------------------------------
    def mine_store(self, minion_id: str, request: protocol.MineStore) -> protocol.Ok:
        data = dict(request.data)
        if not request.clear:
            stored = self.ctx.data.fetch(minion_id, mine.BANK)
            if isinstance(stored, dict):
                stored.update(data)
                data = stored
        self.ctx.data.store(minion_id, mine.BANK, data)   # DataTooLarge: refused too_large
        return protocol.Ok()

    def mine_get(self, minion_id: str, request: protocol.MineGet) -> protocol.MineData:
        ctx = self.ctx
        try:
            data = mine.lookup(minion_id, request.tgt, request.fun, request.tgt_type,
                               acl=optional_option(ctx.opts, "mine_get", dict),
                               accepted=ctx.keys.list_keys().get("minions", []), mines=ctx.data.view(mine.BANK),
                               grains=ctx.data.view("grains"), pillars=ctx.data.view("pillar"),
                               nodegroups=option(ctx.opts, "nodegroups", dict))
        except match.MatchError as exc:
            raise Refused("bad_target", exc.message) from None
        return protocol.MineData(data=data)

    def mine_delete(self, minion_id: str, request: protocol.MineDelete) -> protocol.Ok:
        stored = self.ctx.data.fetch(minion_id, mine.BANK)
        if isinstance(stored, dict) and request.fun in stored:
            del stored[request.fun]
            self.ctx.data.store(minion_id, mine.BANK, stored)
        return protocol.Ok()

    def mine_flush(self, minion_id: str, request: protocol.MineFlush) -> protocol.Ok:
        self.ctx.data.store(minion_id, mine.BANK, {})
        return protocol.Ok()
