"""What the master keeps about each minion: ``_grains`` and ``_pillar`` (compiled for the session's id)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from runtime import protocol
from runtime.master.handlers.context import WorkerContext
from runtime.master.store.errors import StoreUnavailable

if TYPE_CHECKING:
    from runtime.master.pillar_service import PillarService


class MinionDataHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.PillarRequest: "pillar",     # sealed: the minion id comes from the session
        protocol.GrainsUpload: "grains",
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self._pillar: PillarService | None = None   # made at the first _pillar (it loads the compiler)

    def _store_grains(self, minion_id: str, grains: dict[str, Any]) -> None:
        stored = dict(grains)
        stored["id"] = minion_id
        self.ctx.data.store(minion_id, "grains", stored)

    def grains(self, minion_id: str, upload: protocol.GrainsUpload) -> protocol.Ok:
        self._store_grains(minion_id, upload.grains)
        return protocol.Ok()

    def pillar(self, minion_id: str, request: protocol.PillarRequest) -> protocol.PillarReply:
        if request.ignored:  # Salt's _pillar load could carry these to ext_pillar; here they are dropped (class 11)
            self.ctx.refusals.warning("aes:_pillar:override", "ignored %s in _pillar from minion %s (override): a "
                                      "minion cannot change what its pillar is compiled from",
                                      ", ".join(request.ignored), minion_id)
        grains = request.grains
        if grains is not None:
            try:
                self._store_grains(minion_id, grains)
            except StoreUnavailable as exc:   # the pillar is compiled from the grains sent all the same
                self.ctx.refusals.warning("aes:_pillar:store_unavailable", "grains of minion %s not cached: %s",
                                          minion_id, exc.message)
        else:
            grains = self.ctx.data.fetch(minion_id, "grains") or {}
        if self._pillar is None:
            from runtime.master.pillar_service import PillarService

            self._pillar = PillarService(self.ctx.opts, self.ctx.data)
        return protocol.PillarReply(pillar=self._pillar.compile(minion_id, dict(grains), request.saltenv,
                                                                request.pillarenv, clean_cache=request.clean_cache))
