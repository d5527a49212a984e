"""The wire protocol's vocabulary: one frozen class per request and per reply.

Each request class names its wire command (``COMMAND``), who may send it (``CLASS``: auth,
client or session), its reply class (``REPLY``); ``from_wire()`` makes every type, size and shape
check of the message, ``to_wire()`` gives the map that travels.  The command table
(``COMMANDS``), the request proxy's queues and rate limits (``transport``), the master's
dispatch (``runtime.master.worker``) and docs/protocol.md §5 are all derived from these classes.

    base.py      MessageClass, ProtocolError, Request/Reply, the field checks, encode_clear()
    auth.py      _auth (hello and signed reply)
    client.py    publish, job_returns, fileserver_update (local users) and their bodies
    session.py   sealed minion requests: heartbeat, publish key, return, pillar, grains, events
    files.py     sealed file server requests
    registry.py  REQUESTS, COMMANDS, classify(), parse_*_request()
    errors.py    ERRORS: every error token the master answers with

``from runtime import protocol`` loads a module of this package when one of its names is first
used (``protocol.Publish`` loads client.py only): making forty dataclasses costs tens of
milliseconds, which ``saltpan run`` need not pay for the messages it never sends.

Adding a master command: see docs/development.md, "Adding a master command".
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from runtime.protocol.base import (
    ErrorReply,
    Message,
    MessageClass,
    Ok,
    ProtocolError,
    Reply,
    Request,
    encode_clear,
)

if TYPE_CHECKING:
    from runtime.protocol.auth import AuthHello, AuthReply
    from runtime.protocol.client import (
        ClientProof,
        FileserverUpdate,
        FileserverUpdateReply,
        JobQuery,
        JobReturns,
        JobReturnsReply,
        Publish,
        PublishJob,
        PublishReply,
        RemoteUpdate,
        UpdateQuery,
        valid_function_name,
    )
    from runtime.protocol.errors import ERRORS, MINION_SIDE, ErrorToken
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
        classify_request,
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
        MineData,
        MineDelete,
        MineFlush,
        MineGet,
        MineStore,
        MinionEvent,
        MinionEvents,
        PillarReply,
        PillarRequest,
        PublishKeyReply,
        PublishKeyRequest,
        SessionRequest,
    )

# name -> the module of this package that defines it (loaded on first use)
_HOMES = {
    **dict.fromkeys(("AuthHello", "AuthReply"), "auth"),
    **dict.fromkeys(("ClientProof", "FileserverUpdate", "FileserverUpdateReply", "JobQuery", "JobReturns",
                     "JobReturnsReply", "Publish", "PublishJob", "PublishReply", "RemoteUpdate", "UpdateQuery",
                     "valid_function_name"), "client"),
    **dict.fromkeys(("ERRORS", "ErrorToken", "MINION_SIDE"), "errors"),
    **dict.fromkeys(("DirList", "DirListReply", "FileChunk", "FileEnvs", "FileEnvsReply", "FileFind", "FileFindReply",
                     "FileHash", "FileHashReply", "FileList", "FileListReply", "ServeFile"), "files"),
    **dict.fromkeys(("CLEAR_COMMANDS", "COMMANDS", "INNER_MESSAGES", "REQUESTS", "SESSION_COMMANDS", "UNKNOWN_CLASS",
                     "classify", "classify_request", "envelope_class", "parse_clear_request", "parse_session_request", "read_envelope"),
                    "registry"),
    **dict.fromkeys(("MAX_EVENTS_PER_REQUEST", "PILLAR_OVERRIDES", "EventsReply", "GrainsUpload", "Heartbeat",
                     "HeartbeatReply", "JobReturn", "MineData", "MineDelete", "MineFlush", "MineGet", "MineStore",
                     "MinionEvent", "MinionEvents", "PillarReply", "PillarRequest",
                     "PublishKeyReply", "PublishKeyRequest", "SessionRequest"), "session"),
}

__all__ = ["AuthHello", "AuthReply", "CLEAR_COMMANDS", "COMMANDS", "ClientProof", "DirList", "DirListReply",
    "ERRORS", "ErrorReply", "ErrorToken", "EventsReply", "FileChunk", "FileEnvs", "FileEnvsReply", "FileFind",
    "FileFindReply", "FileserverUpdate", "FileserverUpdateReply",
    "FileHash", "FileHashReply", "FileList", "FileListReply", "GrainsUpload", "Heartbeat", "HeartbeatReply",
    "INNER_MESSAGES", "JobQuery", "MINION_SIDE", "JobReturn", "JobReturns", "MineData", "MineDelete", "MineFlush",
    "MineGet", "MineStore", "JobReturnsReply", "MAX_EVENTS_PER_REQUEST",
    "Message", "MessageClass", "MinionEvent", "MinionEvents", "Ok", "PILLAR_OVERRIDES", "PillarReply",
    "PillarRequest", "ProtocolError", "Publish", "PublishJob", "PublishKeyReply", "PublishKeyRequest",
    "PublishReply", "REQUESTS", "RemoteUpdate", "Reply", "Request", "SESSION_COMMANDS", "ServeFile", "SessionRequest",
    "UNKNOWN_CLASS", "UpdateQuery", "classify", "classify_request", "encode_clear", "envelope_class",
    "parse_clear_request",
    "parse_session_request", "read_envelope", "valid_function_name"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'runtime.protocol' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"runtime.protocol.{home}"), name)
    globals()[name] = value
    return value
