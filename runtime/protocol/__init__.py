"""The wire protocol's vocabulary: one frozen class per request and per reply.

Each request class names its wire command (``COMMAND``), who may send it (``CLASS``: auth,
client or session), its reply class (``REPLY``); ``from_wire()`` makes every type, size and shape
check of the message, ``to_wire()`` gives the map that travels.  The command table
(``COMMANDS``), the request proxy's queues and rate limits (``transport``), the master's
dispatch (``runtime.master.worker``) and docs/protocol.md §5 are all derived from these classes.

    base.py      MessageClass, ProtocolError, Request/Reply, the field checks
    auth.py      _auth (hello and signed reply)
    client.py    publish, job_returns (local users) and their bodies
    session.py   sealed minion requests: heartbeat, publish key, return, pillar, grains, events
    files.py     sealed file server requests
    registry.py  REQUESTS, COMMANDS, classify(), parse_*_request(), encode_clear()

Adding a master command: see docs/protocol.md, "Adding a command".
"""

from runtime.protocol.auth import AuthHello, AuthReply
from runtime.protocol.base import ErrorReply, Message, MessageClass, Ok, ProtocolError, Reply, Request
from runtime.protocol.client import (
    ClientProof,
    JobQuery,
    JobReturns,
    JobReturnsReply,
    Publish,
    PublishJob,
    PublishReply,
    valid_function_name,
)
from runtime.protocol.files import (
    DirList,
    DirListReply,
    FileChunk,
    FileEnvs,
    FileEnvsReply,
    FileFind,
    FileFindReply,
    FileHash,
    FileHashReply,
    FileList,
    FileListReply,
    ServeFile,
)
from runtime.protocol.registry import (
    CLEAR_COMMANDS,
    COMMANDS,
    INNER_MESSAGES,
    REQUESTS,
    SESSION_COMMANDS,
    UNKNOWN_CLASS,
    classify,
    encode_clear,
    envelope_class,
    parse_clear_request,
    parse_session_request,
    read_envelope,
)
from runtime.protocol.session import (
    MAX_EVENTS_PER_REQUEST,
    PILLAR_OVERRIDES,
    EventsReply,
    GrainsUpload,
    Heartbeat,
    HeartbeatReply,
    JobReturn,
    MinionEvent,
    MinionEvents,
    PillarReply,
    PillarRequest,
    PublishKeyReply,
    PublishKeyRequest,
    SessionRequest,
)

__all__ = [
    "CLEAR_COMMANDS", "COMMANDS", "INNER_MESSAGES", "MAX_EVENTS_PER_REQUEST", "PILLAR_OVERRIDES", "REQUESTS", "SESSION_COMMANDS",
    "UNKNOWN_CLASS", "AuthHello", "AuthReply", "ClientProof", "DirList", "DirListReply", "ErrorReply",
    "EventsReply", "FileChunk", "FileEnvs", "FileEnvsReply", "FileFind", "FileFindReply", "FileHash",
    "FileHashReply", "FileList", "FileListReply", "GrainsUpload", "Heartbeat", "HeartbeatReply", "JobQuery",
    "JobReturn", "JobReturns", "JobReturnsReply", "Message", "MessageClass", "MinionEvent", "MinionEvents", "Ok",
    "PillarReply", "PillarRequest", "ProtocolError", "Publish", "PublishJob", "PublishKeyReply",
    "PublishKeyRequest", "PublishReply", "Reply", "Request", "ServeFile", "SessionRequest", "classify",
    "encode_clear", "envelope_class", "parse_clear_request", "parse_session_request", "read_envelope",
    "valid_function_name",
]
