"""Minions' events on the master's bus (``_minion_event``): never turned into jobs (SECURITY.md class 3)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from runtime import protocol
from runtime.config import option
from runtime.events import MASTER_PREFIXES
from runtime.master.event_size import bound_event
from runtime.master.handlers.context import WorkerContext

MAX_TAG_LENGTH = 512


class EventHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.MinionEvents: "minion_event",   # sealed: the minion id comes from the session
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def minion_event(self, minion_id: str, batch: protocol.MinionEvents) -> protocol.EventsReply:
        """Fire each event with ``data["id"]`` set from the session; the master's own tags are refused."""
        fired = 0
        for event in batch.events:
            tag = event.tag
            if not tag or len(tag) > MAX_TAG_LENGTH or tag.startswith(MASTER_PREFIXES):
                self.ctx.refusals.warning(f"event:{minion_id}", "refused event tag %r from minion %s (master_tag)",
                                          tag[:80], minion_id)
                continue
            data = bound_event(dict(event.data), option(self.ctx.opts, "max_event_size", int))
            if data is None:   # larger than max_event_size even trimmed as Salt trims
                self.ctx.refusals.warning(f"event:{minion_id}:too_large", "dropped event %r from minion %s "
                                          "(too_large): larger than max_event_size even trimmed", tag[:80], minion_id)
                continue
            data["id"] = minion_id
            self.ctx.events.fire(tag, data)
            fired += 1
        return protocol.EventsReply(ok=True, fired=fired)
