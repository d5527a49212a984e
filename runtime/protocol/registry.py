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
from runtime.protocol.base import Message, MessageClass, ProtocolError, Request, encode_clear
from runtime.protocol.client import (
    JOB_LIMITS,
    ClientProof,
    FileserverUpdate,
    JobQuery,
    JobReturns,
    Publish,
    PublishJob,
    RemoteUpdate,
    UpdateQuery,
)
from runtime.protocol.files import DirList, FileEnvs, FileFind, FileHash, FileList, ServeFile
from runtime.protocol.session import (
    GrainsUpload,
    Heartbeat,
    JobReturn,
    MineDelete,
    MineFlush,
    MineGet,
    MineStore,
    MinionEvent,
    MinionEvents,
    PillarRequest,
    PublishKeyRequest,
    SessionRequest,
)

__all__ = ["CLASSIFY_LIMITS", "CLEAR_COMMANDS", "COMMANDS", "INNER_MESSAGES", "REQUESTS", "SESSION_COMMANDS",
           "UNKNOWN_CLASS", "classify", "classify_request", "encode_clear", "envelope_class", "parse_clear_request",
           "parse_session_request", "read_envelope"]

# Every request of the protocol, in the order docs/protocol.md lists them.
REQUESTS: tuple[type[Request[Any]], ...] = (
    AuthHello, Publish, JobReturns, FileserverUpdate,
    Heartbeat, PublishKeyRequest, JobReturn, PillarRequest, GrainsUpload, MineStore, MineGet, MineDelete, MineFlush,
    MinionEvents,
    FileEnvs, FileList, DirList, FileFind, FileHash, ServeFile,
)

# The messages carried inside requests (a client's proof and packed body, a minion's events).
INNER_MESSAGES: tuple[type[Message], ...] = (ClientProof, PublishJob, JobQuery, UpdateQuery, RemoteUpdate, MinionEvent)

# wire command -> request class (read-only)
COMMANDS: Mapping[str, type[Request[Any]]] = MappingProxyType({cls.COMMAND: cls for cls in REQUESTS})
CLEAR_COMMANDS: Mapping[str, type[Request[Any]]] = MappingProxyType(
    {cmd: cls for cmd, cls in COMMANDS.items() if cls.CLASS is not MessageClass.SESSION})
SESSION_COMMANDS: Mapping[str, type[SessionRequest[Any]]] = MappingProxyType(
    {cmd: cls for cmd, cls in COMMANDS.items() if issubclass(cls, SessionRequest)})

# What the request proxy gives anything it cannot read, or that names no clear command: the
# class of hellos, the most tightly rate-limited.
UNKNOWN_CLASS = MessageClass.AUTH


def read_envelope(body: bytes | memoryview, limits: codec.Limits = codec.DEFAULT_LIMITS) -> codec.Envelope:
    """Decode a request body: the one decoding that classification and dispatch share."""
    return codec.unpack_envelope(body, limits)


def envelope_class(envelope: codec.Envelope) -> MessageClass:
    """The class of a decoded request: sealed ones are the session's; a clear one is its command's."""
    if envelope.enc == codec.ENC_AES:
        return MessageClass.SESSION
    cmd = envelope.load.get("cmd")
    request = CLEAR_COMMANDS.get(cmd) if isinstance(cmd, str) else None
    return request.CLASS if request is not None else UNKNOWN_CLASS


_SEALED_PREFIX = codec.pack({"enc": codec.ENC_AES, "load": None})[:-1]    # fixmap(2) "enc" "aes" "load"
_CLEAR_PREFIX = codec.pack({"enc": codec.ENC_CLEAR, "load": None})[:-1]   # fixmap(2) "enc" "clear" "load"
# No client request holds more than this (cmd, a body of at most a publish's size, a proof of
# four fields): the proxy reads nothing bigger.
CLASSIFY_LIMITS = codec.Limits(max_size=JOB_LIMITS.max_size + 64 * 1024, max_items=32, max_depth=3)


# The wire names of the commands a clear request can be granted a class other than a hello's for:
# a body that does not hold one of them (in any msgpack string encoding the name's UTF-8 bytes
# appear as they are) cannot decode to such a request.
_PRIVILEGED_CLEAR_NAMES = tuple(cmd.encode() for cmd, cls in CLEAR_COMMANDS.items() if cls.CLASS is not UNKNOWN_CLASS)


def classify(body: bytes | memoryview) -> MessageClass:
    """The class of a request body (:func:`classify_request` without the envelope)."""
    return classify_request(body)[0]


def classify_request(body: bytes | memoryview) -> tuple[MessageClass, codec.Envelope | None]:
    """The class of a request body, for the request proxy's queues and rate limits, at a cost
    bounded whatever the body (the proxy reads every request before any rate limit), and the
    decoded envelope of a client request (the proxy checks its proof to choose its flow):

    * a sealed envelope as saltpan packs it (``enc`` first): the session's, without decoding.
      With duplicate keys refused, these bytes decode to a sealed envelope or to nothing a worker
      accepts, so no other handler can run for them;
    * a clear envelope naming a client command: decoded with :func:`read_envelope`, the workers'
      own decoding, within ``CLASSIFY_LIMITS`` (after ``codec.small_shape``, which builds nothing,
      found it that small), and classified by its command in the command table;
    * anything else (hellos, undecodable bodies, anything beyond the limits): the hello class,
      the most tightly limited, which is what the command table gives it anyway.
    """
    head = bytes(body[:len(_CLEAR_PREFIX)])
    if head.startswith(_SEALED_PREFIX):
        return MessageClass.SESSION, None
    if head != _CLEAR_PREFIX or len(body) > CLASSIFY_LIMITS.max_size:
        return UNKNOWN_CLASS, None
    raw = body if isinstance(body, bytes) else bytes(body)
    if not any(name in raw for name in _PRIVILEGED_CLEAR_NAMES):
        return UNKNOWN_CLASS, None
    if not codec.small_shape(raw, CLASSIFY_LIMITS.max_depth, CLASSIFY_LIMITS.max_items):
        return UNKNOWN_CLASS, None
    try:
        envelope = read_envelope(raw, CLASSIFY_LIMITS)
    except codec.DecodeError:
        return UNKNOWN_CLASS, None
    kind = envelope_class(envelope)
    return kind, envelope if kind is not UNKNOWN_CLASS else None


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
