"""Sessions and the publish key: ``_auth`` (anyone), ``_heartbeat`` and ``_publish_key`` (sealed)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from runtime import protocol
from runtime.master.handlers.context import Refused, WorkerContext

log = logging.getLogger("saltpan.master.worker")


class KeyHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.AuthHello: "auth",                   # anyone
        protocol.Heartbeat: "heartbeat",              # sealed: the minion id comes from the session
        protocol.PublishKeyRequest: "publish_key",
    })
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def auth(self, peer: str, hello: protocol.AuthHello) -> protocol.AuthReply | protocol.ErrorReply:
        ctx = self.ctx
        decision = ctx.auth.handle(hello.to_wire())
        if decision.outcome == "accepted":
            log.info(decision.log_line())
        else:
            # pending/rejected/denied once per id (bounded by the key store); refusals once per
            # reason, whatever the id, so a flood of new ids cannot flood the log
            who = decision.minion_id if decision.outcome in ("pending", "rejected", "denied") else "*"
            ctx.refusals.info(f"auth:{decision.outcome}:{decision.reason}:{who}", "%s (from %s)",
                              decision.log_line(), peer)
        event = decision.event()
        if event is not None:
            ctx.events.fire("salt/auth", event)
        if "error" in decision.reply:
            return protocol.ErrorReply.from_wire(decision.reply)
        return protocol.AuthReply.from_wire(decision.reply)

    def heartbeat(self, minion_id: str, beat: protocol.Heartbeat) -> protocol.HeartbeatReply:
        sessions = self.ctx.sessions
        current = sessions.current_publish_key()
        epoch, publish_key = current.epoch, None
        if beat.epoch != current.epoch:
            held = sessions.minion_sessions(minion_id)
            if held:
                pkey = sessions.publish_key_for(held[-1])
                epoch, publish_key = pkey.epoch, pkey.key
        return protocol.HeartbeatReply(now=int(time.time() * 1000),
                                       heartbeat=self._period(), epoch=epoch,
                                       publish_key=publish_key)

    def _period(self) -> float:
        """The heartbeat period the master asks of its fleet now (runtime.master.heartbeats)."""
        settings = self.ctx.auth.settings
        return settings.heartbeat_period() if settings.heartbeat_period else settings.heartbeat_s

    def publish_key(self, minion_id: str, request: protocol.PublishKeyRequest) -> protocol.PublishKeyReply:
        held = self.ctx.sessions.minion_sessions(minion_id)
        if not held:
            raise Refused("unknown_session", "no session")
        pkey = self.ctx.sessions.publish_key_for(held[-1])
        return protocol.PublishKeyReply(epoch=pkey.epoch, publish_key=pkey.key)
