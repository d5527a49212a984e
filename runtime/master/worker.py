"""MWorker: answers every request the ReqServer hands it (one, or several handed together).

This module is the dispatcher only.  A request body is read with ``runtime.protocol`` (the same
decoding the request proxy classified it with) into its message class, every shape check made
there, then handed to the one handler of that class (``runtime.master.handlers``, a module per
concern).  Dispatch is an explicit allow-list (SECURITY.md class 1):

* clear loads: ``_auth`` (anyone), ``publish`` and ``job_returns`` (a local user proving it
  holds its client key);
* aes loads (sealed under a minion's session): the session commands, always acting for the
  minion id bound to the session, never an id named in the load.

Anything else gets a clear error reply; a malformed message never crashes the worker.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import zmq

from runtime import codec, protocol, transport
from runtime.crypt.channel import Request as ChannelRequest
from runtime.crypt.errors import CryptoError
from runtime.crypt.identity import Identity
from runtime.master.datacache import DataTooLarge
from runtime.master.fileserver import FileServerError
from runtime.master.handlers import (
    HANDLER_CLASSES,
    SEES_NO_RETURNS,
    Handler,
    Refused,
    WorkerContext,
    handler_table,
)
from runtime.master.store.errors import StoreError
from runtime.transport_flows import encode_meta

log = logging.getLogger("saltpan.master.worker")

WORKERS_IPC = "workers.ipc"
PUBLISH_PULL = "publish_pull.ipc"

__all__ = ["HANDLER_CLASSES", "PUBLISH_PULL", "WORKERS_IPC", "Worker", "run"]


@dataclass(frozen=True)
class _Opened:
    """A sealed request opened under its session: who asks, and what."""

    request: ChannelRequest
    minion_id: str
    payload: Any
    cmd: Any


class Worker:
    """The dispatcher of one MWorker process."""

    def __init__(self, opts: dict[str, Any], identity: Identity, ctx: zmq.Context):
        self.ctx = WorkerContext.open(opts, identity, ctx,
                                      transport.ipc_address(opts["sock_dir"], PUBLISH_PULL))
        self.refusals = self.ctx.refusals
        table = handler_table(self.ctx)
        self.handlers: Mapping[type[protocol.Request[Any]], Handler] = table.single
        self.returns = table.returns
        self._read_ahead = table.read_ahead

    def handle(self, peer: str, body: bytes) -> bytes:
        """The reply body to one request body from ``peer`` (the client's address)."""
        return self.serve(peer, body)[0]

    def serve(self, peer: str, body: bytes) -> tuple[bytes, bytes]:
        """``(reply body, meta)`` for one request body from ``peer``: ``meta`` names the session
        served (an accepted hello's or a sealed request's, ``transport_flows.encode_meta``), so that
        the request proxy queues that session's later requests as its minion's; else ``b""``."""
        return self.serve_many([(peer, body)])[0]

    def serve_many(self, requests: Sequence[tuple[str, bytes]]) -> list[tuple[bytes, bytes]]:
        """:meth:`serve` for requests handed over together, answered in order.  All are opened
        first and their session requests told to the handlers that read ahead for a batch
        (``read_ahead``); minions' returns among them are stored with one commit (``_return``'s
        batch handler), held back until the next request of a kind that may read them (any but
        ``SEES_NO_RETURNS``) or the end: a request after a return that could see it sees it stored."""
        out: list[tuple[bytes, bytes]] = []
        # in their order: (index in out, the session request opened or a clear request's peer, its
        # message (or why it has none) or the clear load)
        turns: list[tuple[int, _Opened | str, Any]] = []
        for peer, body in requests:
            try:
                envelope = protocol.read_envelope(body)
            except codec.DecodeError as exc:
                self.refusals.warning(f"decode:{exc.reason}", "refused request from %s: %s", peer, exc)
                out.append((_clear(codec.error_load(exc.reason, str(exc))), b""))
                continue
            if envelope.enc != codec.ENC_AES:
                turns.append((len(out), peer, envelope.load))
                out.append((b"", b""))    # answered in its turn below: after the returns before it are stored
                continue
            opened = self._open(peer, envelope.load)
            if isinstance(opened, bytes):
                out.append((opened, b""))
                continue
            try:
                message: protocol.Request[Any] | Exception = self._message(opened)
            except Exception as exc:  # noqa: BLE001 - answered (and logged) as the handler's own failures are
                message = exc
            turns.append((len(out), opened, message))
            out.append((b"", encode_meta(opened.request.session.sid, opened.minion_id)))
        self.read_ahead([(who.minion_id, what) for _, who, what in turns
                         if isinstance(who, _Opened) and not isinstance(what, Exception)])
        held: list[tuple[int, _Opened, protocol.JobReturn]] = []
        for index, who, what in turns:
            if isinstance(who, str):
                self._answer_held(held, out)
                out[index] = self._clear(who, what)
            elif isinstance(what, protocol.JobReturn):
                held.append((index, who, what))     # its reply comes with the others held
            elif isinstance(what, Exception):
                out[index] = (self._reply(who, _raise(what)), out[index][1])
            else:
                if type(what) not in SEES_NO_RETURNS:
                    self._answer_held(held, out)
                out[index] = (self._reply(who, partial(self.handlers[type(what)], who.minion_id, what)),
                              out[index][1])
        self._answer_held(held, out)
        return out

    def read_ahead(self, requests: Sequence[tuple[str, protocol.Request[Any]]]) -> None:
        try:
            self._read_ahead(requests)
        except Exception:  # noqa: BLE001 - only a saving: each request reads for itself without it
            self.refusals.exception("internal:read_ahead", "reading ahead for %d requests failed", len(requests))

    def _answer_held(self, held: list[tuple[int, _Opened, protocol.JobReturn]],
                     out: list[tuple[bytes, bytes]]) -> None:
        if not held:
            return
        try:
            outcomes: list[Exception | None] = self.returns([(o.minion_id, m) for _, o, m in held])
        except Exception as exc:  # noqa: BLE001 - each reply reports it (StoreError, or a bug: logged)
            outcomes = [exc] * len(held)
        for (index, opened, _), outcome in zip(held, outcomes, strict=True):
            out[index] = (self._reply(opened, _raise(outcome) if outcome is not None else protocol.Ok),
                          out[index][1])
        held.clear()

    def _clear(self, peer: str, load: dict[Any, Any]) -> tuple[bytes, bytes]:
        cmd = load.get("cmd")
        try:
            request = protocol.parse_clear_request(load)
            answer = self.handlers[type(request)](peer, request)
            served = b""
            if isinstance(answer, protocol.AuthReply) and answer.outcome == "accepted" and answer.sid:
                served = encode_meta(answer.sid, answer.minion_id)
            return _clear(answer.to_wire()), served
        except protocol.ProtocolError as exc:
            if exc.reason == "unknown_command":
                self.refusals.warning("clear:unknown", "refused clear command %r from %s (unknown_command)",
                                      str(cmd)[:64], peer)
            else:
                self.refusals.warning(f"clear:{cmd}:{exc.reason}", "refused %s from %s (%s): %s", cmd, peer,
                                      exc.reason, exc.message)
            return _clear(codec.error_load(exc.reason, exc.message)), b""
        except (Refused, StoreError) as exc:
            self.refusals.warning(f"clear:{cmd}:{exc.reason}", "refused %s from %s (%s): %s", cmd, peer, exc.reason,
                                  exc.message)
            return _clear(codec.error_load(exc.reason, exc.message)), b""
        except (CryptoError, codec.DecodeError) as exc:
            self.refusals.warning(f"clear:{cmd}:{exc.reason}", "refused %s from %s (%s): %s", cmd, peer, exc.reason,
                                  exc)
            return _clear(codec.error_load(exc.reason, str(exc))), b""
        except Exception as exc:  # noqa: BLE001 - a bug must not take the worker down
            # once per command and kind of failure and interval: a peer repeating the request that
            # trips it must not write a traceback into the log per copy
            self.refusals.exception(f"internal:{_command(cmd)}:{type(exc).__name__}",
                                    "clear command %s from %s failed (internal_error)", _command(cmd), peer)
            return _clear(codec.error_load("internal_error", "the master could not process the request")), b""

    def _open(self, peer: str, load: dict[Any, Any]) -> _Opened | bytes:
        """The request opened under its session, or the error reply (clear) when it cannot be."""
        try:
            request = self.ctx.channel.open_request(load)
        except (CryptoError, codec.DecodeError) as exc:
            self.refusals.warning(f"aes:{exc.reason}", "refused sealed request from %s (%s): %s", peer, exc.reason,
                                  exc)
            return _clear(codec.error_load(exc.reason, str(exc)))
        payload = request.payload
        return _Opened(request, request.minion_id, payload, payload.get("cmd") if isinstance(payload, dict) else None)

    @staticmethod
    def _message(opened: _Opened) -> protocol.Request[Any]:
        message = protocol.parse_session_request(opened.payload, opened.minion_id)
        if opened.request.heartbeat and not isinstance(message, protocol.Heartbeat):
            # the heartbeat lane is served ahead of the queue of other requests: nothing else rides it
            raise protocol.ProtocolError("malformed", f"a {message.COMMAND} request marked as a heartbeat")
        return message

    def _reply(self, opened: _Opened, answer: Callable[[], protocol.Reply]) -> bytes:
        """The sealed reply: what ``answer()`` returns, or the error load of what it raises."""
        cmd, minion_id = opened.cmd, opened.minion_id
        reply: dict[str, Any]
        try:
            reply = answer().to_wire()
        except protocol.ProtocolError as exc:
            if exc.reason == "unknown_command":
                self.refusals.warning("aes:unknown", "refused command %r from minion %s (unknown_command)",
                                      str(cmd)[:64], minion_id)
            elif exc.reason == "id_mismatch":
                # Salt refuses a load whose id is not the authenticated one ("Request id mismatch"): a
                # minion asking in another's name gets an error, never the other's data.
                self.refusals.warning(f"aes:{cmd}:id_mismatch", "refused %s from minion %s (id_mismatch): naming "
                                      "id %r", cmd, minion_id, str(opened.payload.get("id"))[:64])
            else:
                self.refusals.warning(f"aes:{cmd}:{exc.reason}", "refused %s from minion %s (%s): %s", cmd,
                                      minion_id, exc.reason, exc.message)
            reply = codec.error_load(exc.reason, exc.message)
        except (Refused, FileServerError, DataTooLarge, StoreError) as exc:
            self.refusals.warning(f"aes:{cmd}:{exc.reason}", "refused %s from minion %s (%s): %s", cmd, minion_id,
                                  exc.reason, exc.message)
            reply = codec.error_load(exc.reason, exc.message)
        except Exception as exc:  # noqa: BLE001
            self.refusals.exception(f"internal:{_command(cmd)}:{type(exc).__name__}",
                                    "%s from minion %s failed (internal_error)", _command(cmd), minion_id)
            reply = codec.error_load("internal_error", "the master could not process the request")
        return self.ctx.channel.seal_reply(opened.request, reply)

    def close(self) -> None:
        self.ctx.close()


def _raise(exc: Exception) -> Callable[[], protocol.Reply]:
    """An answer that raises ``exc`` (a refusal decided before the reply is made)."""
    def answer() -> protocol.Reply:
        raise exc
    return answer


def _command(cmd: Any) -> str:
    """A command name for the log: one of the protocol's (anything else is shown as a repr, cut short)."""
    return cmd if isinstance(cmd, str) and cmd in protocol.COMMANDS else repr(cmd)[:40]


def _clear(load: Mapping[str, Any]) -> bytes:
    return codec.pack_envelope(codec.ENC_CLEAR, dict(load))


def run(opts: dict[str, Any], identity: Identity, index: int, stop: threading.Event | None = None) -> None:
    """MWorker process body: one request at a time from the ReqServer (workers.ipc) until SIGTERM."""
    stop = stop or threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ctx = zmq.Context()
    worker = Worker(opts, identity, ctx)
    # What the worker holds for its whole life (modules, its stores: psycopg's types and adapters with
    # master_store: postgres) leaves the collector's view: a full collection, which a pillar compile's
    # garbage triggers, would otherwise walk all of it again each time (a third of a cluster worker's CPU).
    gc.freeze()
    sock = transport.WorkerSocket(ctx, transport.ipc_address(opts["sock_dir"], WORKERS_IPC))
    log.debug("worker %d ready", index)
    try:
        while not stop.is_set():
            requests = sock.recv_many(200)
            if requests and not requests[0].rid:
                sock.reply(requests[0], _clear(codec.error_load("malformed", "malformed request")))
                continue
            for request, (reply, meta) in zip(requests, worker.serve_many([(r.peer, r.body) for r in requests]),
                                              strict=True):
                sock.reply(request, reply, meta)
    finally:
        worker.close()
        sock.close()
        ctx.term()
