"""The command table, derived from the message classes, and the one way requests are read.

Both the master's request proxy (which queue and which rate limit a request gets) and its
workers (which handler runs) read a request body with :func:`read_envelope`, and both take its
class from the same table: what is rate-limited as a hello can only ever run as a hello.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtime import codec
from runtime.protocol.auth import AuthHello
from runtime.protocol.base import Message, MessageClass, ProtocolError, Request
from runtime.protocol.client import ClientProof, JobQuery, JobReturns, Publish, PublishJob
from runtime.protocol.files import DirList, FileEnvs, FileFind, FileHash, FileList, ServeFile
from runtime.protocol.session import (
    GrainsUpload,
    Heartbeat,
    JobReturn,
    MinionEvent,
    MinionEvents,
    PillarRequest,
    PublishKeyRequest,
    SessionRequest,
)

# Every request of the protocol, in the order docs/protocol.md lists them.
REQUESTS: tuple[type[Request[Any]], ...] = (
    AuthHello, Publish, JobReturns,
    Heartbeat, PublishKeyRequest, JobReturn, PillarRequest, GrainsUpload, MinionEvents,
    FileEnvs, FileList, DirList, FileFind, FileHash, ServeFile,
)

# The messages carried inside requests (a client's proof and packed body, a minion's events).
INNER_MESSAGES: tuple[type[Message], ...] = (ClientProof, PublishJob, JobQuery, MinionEvent)

# wire command -> request class (read-only)
COMMANDS: Mapping[str, type[Request[Any]]] = MappingProxyType({cls.COMMAND: cls for cls in REQUESTS})
CLEAR_COMMANDS: Mapping[str, type[Request[Any]]] = MappingProxyType(
    {cmd: cls for cmd, cls in COMMANDS.items() if cls.CLASS is not MessageClass.SESSION})
SESSION_COMMANDS: Mapping[str, type[SessionRequest[Any]]] = MappingProxyType(
    {cmd: cls for cmd, cls in COMMANDS.items() if issubclass(cls, SessionRequest)})

# What the request proxy gives anything it cannot read, or that names no clear command: the
# class of hellos, the most tightly rate-limited.
UNKNOWN_CLASS = MessageClass.AUTH


def read_envelope(body: bytes | memoryview) -> codec.Envelope:
    """Decode a request body: the one decoding that classification and dispatch share."""
    return codec.unpack_envelope(body)


def envelope_class(envelope: codec.Envelope) -> MessageClass:
    """The class of a decoded request: sealed ones are the session's; a clear one is its command's."""
    if envelope.enc == codec.ENC_AES:
        return MessageClass.SESSION
    cmd = envelope.load.get("cmd")
    request = CLEAR_COMMANDS.get(cmd) if isinstance(cmd, str) else None
    return request.CLASS if request is not None else UNKNOWN_CLASS


def classify(body: bytes | memoryview) -> MessageClass:
    """The class of a request body, for the request proxy's queues and rate limits."""
    try:
        return envelope_class(read_envelope(body))
    except codec.DecodeError:
        return UNKNOWN_CLASS


def parse_clear_request(load: dict[Any, Any]) -> Request[Any]:
    """The request a clear load carries (``unknown_command``, or the message's own refusal)."""
    cmd = load.get("cmd")
    request = CLEAR_COMMANDS.get(cmd) if isinstance(cmd, str) else None
    if request is None:
        raise ProtocolError("unknown_command", "unknown command")
    return request.from_wire(load)


def parse_session_request(payload: Any, minion_id: str) -> SessionRequest[Any]:
    """The request a sealed payload from ``minion_id``'s session carries.

    Refused, in this order: ``unknown_command`` (not a session command: clear commands and every
    other name included); ``id_mismatch`` (an ``id`` field naming another minion than the
    session's: Salt's "Request id mismatch"); the message's own checks.
    """
    cmd = payload.get("cmd") if isinstance(payload, dict) else None
    request = SESSION_COMMANDS.get(cmd) if isinstance(cmd, str) else None
    if request is None:
        raise ProtocolError("unknown_command", "unknown command")
    if payload.get("id", minion_id) != minion_id:
        raise ProtocolError("id_mismatch", "the request names another minion id than its session's")
    return request.from_wire(payload)


def encode_clear(request: Request[Any]) -> bytes:
    """A clear request body (``_auth``, ``publish``, ``job_returns``)."""
    if request.CLASS is MessageClass.SESSION:
        raise ValueError(f"{request.COMMAND} travels sealed, not clear")
    return codec.pack_envelope(codec.ENC_CLEAR, request.to_wire())
