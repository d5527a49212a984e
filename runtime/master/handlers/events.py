"""Minions' events on the master's bus (``_minion_event``): never turned into jobs (SECURITY.md class 3)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from runtime import protocol
from runtime.config import option
from runtime.master.event_size import bound_event
from runtime.master.event_tags import tag_refusal
from runtime.master.handlers.context import WorkerContext


class EventHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.MinionEvents: "minion_event",   # sealed: the minion id comes from the session
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def minion_event(self, minion_id: str, batch: protocol.MinionEvents) -> protocol.EventsReply:
        """Fire each event with ``data["id"]`` set from the session; tags in the master's namespaces,
        however written, are refused (``runtime.master.event_tags``)."""
        fired = 0
        for event in batch.events:
            tag = event.tag
            refusal = tag_refusal(tag, minion_id)
            if refusal is not None:
                self.ctx.refusals.warning(f"event:{minion_id}:{refusal}", "refused event tag %s from minion %s (%s)",
                                          ascii(tag[:80]), minion_id, refusal)
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
