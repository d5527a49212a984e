"""Requests of local clients (``saltpan run``, ``saltpan jobs``, ``saltpan fileserver``): ``publish``,
``job_returns`` and ``fileserver_update``.

Each carries a packed ``body`` and a ``proof`` that the sender holds its user's client key
(docs/protocol.md §8).  The body is decoded only once the proof verified:
:meth:`PublishJob.decode`, :meth:`JobQuery.decode` and :meth:`UpdateQuery.decode` are its checks.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, ClassVar, Self

from runtime import codec
from runtime.crypt.clientkey import PROOF_NONCE_SIZE
from runtime.protocol.base import (
    OMIT_NONE,
    Message,
    MessageClass,
    ProtocolError,
    Reply,
    Request,
    array,
    binary,
    boolean,
    integer,
    mapping,
    optional_text,
    submap,
    text,
    texts,
)

MAX_USER_LENGTH = 255      # longer than any system's user names
JOB_LIMITS = codec.Limits(max_size=4 * 1024 * 1024, max_items=100_000, max_depth=32)
_FUN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


def valid_function_name(fun: Any) -> bool:
    """A single ``module.function`` name (no comma lists, no globs)."""
    return isinstance(fun, str) and bool(_FUN_NAME.match(fun))


@dataclasses.dataclass(frozen=True)
class ClientProof(Message):
    """HMAC-SHA256 of the body under the user's client key (``runtime.crypt.clientkey``)."""

    user: str
    ts: int
    nonce: bytes
    mac: bytes

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a client proof", "bad_proof")
        if set(load) != {"user", "ts", "nonce", "mac"}:
            raise ProtocolError("bad_proof", "client proof must have exactly user, ts, nonce and mac")
        return cls(user=text(load, "user", reason="bad_proof", max_len=MAX_USER_LENGTH),
                   ts=integer(load, "ts", reason="bad_proof"),
                   nonce=binary(load, "nonce", reason="bad_proof", size=PROOF_NONCE_SIZE),
                   mac=binary(load, "mac", reason="bad_proof"))


def _client_fields(load: Any) -> tuple[bytes, ClientProof]:
    load = mapping(load, "a client request", "bad_proof")
    if not isinstance(load.get("body"), bytes) or not isinstance(load.get("proof"), dict):
        raise ProtocolError("bad_proof", "a client request needs body and proof")
    return load["body"], ClientProof.from_wire(load["proof"])


@dataclasses.dataclass(frozen=True)
class PublishReply(Reply):
    jid: str
    minions: list[str]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a publish reply")
        return cls(jid=text(load, "jid"), minions=texts(load, "minions"))


@dataclasses.dataclass(frozen=True)
class Publish(Request[PublishReply]):
    """Publish a job."""

    COMMAND: ClassVar[str] = "publish"
    CLASS: ClassVar[MessageClass] = MessageClass.CLIENT
    REPLY: ClassVar[type[Reply]] = PublishReply
    NOTES: ClassVar[str] = ("`body` is a packed `PublishJob`, decoded once the proof verified; `publisher_acl` is checked for `proof.user` against the "
                            "decoded body (§8); `no_minions` when the target matches no accepted minion")

    body: bytes
    proof: ClientProof

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        body, proof = _client_fields(load)
        return cls(body=body, proof=proof)


@dataclasses.dataclass(frozen=True)
class JobReturnsReply(Reply):
    jid: str
    minions: list[str]
    returns: dict[str, dict[str, Any]]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a job_returns reply")
        returns = submap(load, "returns")
        if not all(isinstance(m, str) and isinstance(r, dict) for m, r in returns.items()):
            raise ProtocolError("malformed", "returns must map minion ids to return maps")
        return cls(jid=text(load, "jid"), minions=texts(load, "minions"), returns=returns)


@dataclasses.dataclass(frozen=True)
class JobReturns(Request[JobReturnsReply]):
    """The returns of a job: how a user who cannot read the master's event bus follows its jobs."""

    COMMAND: ClassVar[str] = "job_returns"
    CLASS: ClassVar[MessageClass] = MessageClass.CLIENT
    REPLY: ClassVar[type[Reply]] = JobReturnsReply
    NOTES: ClassVar[str] = ("`body` is a packed `JobQuery`; only the user who published the job (or the master's "
                            "user) may read it, others get `unknown_job`")

    body: bytes
    proof: ClientProof

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        body, proof = _client_fields(load)
        return cls(body=body, proof=proof)


@dataclasses.dataclass(frozen=True)
class RemoteUpdate(Message):
    """What one fetch of one git remote did (an entry of ``FileserverUpdateReply.remotes``)."""

    backend: str  # gitfs or git_pillar
    remote: str  # how messages name the remote (its URL without credentials)
    ok: bool
    changed: bool
    error: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    notes: list[str] = dataclasses.field(default_factory=list)  # force-pushes, re-clones, removed refs

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a remote's update")
        return cls(backend=text(load, "backend"), remote=text(load, "remote"), ok=boolean(load, "ok"),
                   changed=boolean(load, "changed"), error=optional_text(load, "error"),
                   notes=texts(load, "notes", default=[]))


@dataclasses.dataclass(frozen=True)
class FileserverUpdateReply(Reply):
    """Which remotes were fetched, and whether any served file changed."""

    changed: bool
    backends: list[str]
    remotes: tuple[RemoteUpdate, ...]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a fileserver_update reply")
        remotes = tuple(RemoteUpdate.from_wire(item) for item in array(load, "remotes", max_items=10_000))
        return cls(changed=boolean(load, "changed"), backends=texts(load, "backends"), remotes=remotes)


@dataclasses.dataclass(frozen=True)
class FileserverUpdate(Request[FileserverUpdateReply]):
    """Fetch the git remotes of the file server now (Salt's `salt-run fileserver.update`)."""

    COMMAND: ClassVar[str] = "fileserver_update"
    CLASS: ClassVar[MessageClass] = MessageClass.CLIENT
    REPLY: ClassVar[type[Reply]] = FileserverUpdateReply
    NOTES: ClassVar[str] = ("`body` is a packed `UpdateQuery`; only the master's user may ask (`acl` otherwise); "
                            "a backend not in `fileserver_backend` is `bad_backend`; fires "
                            "`salt/fileserver/gitfs/update` when `fileserver_events` is true; a remote that fails "
                            "keeps its last good revision and is reported in `remotes`, not as an error")

    body: bytes
    proof: ClientProof

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        body, proof = _client_fields(load)
        return cls(body=body, proof=proof)


# ---------------------------------------------------------------- bodies

def _timeout(value: Any) -> int:
    """A job's timeout in whole seconds (Salt's ``-t``): absent, nil or 0 is the default, 5 (a
    client rounding ``-t 0.5`` down sends 0); a number of seconds above 0 and below 2**31 is
    rounded up; anything else (negative, NaN, infinite, not a number) is ``bad_job``, before the
    job is given a jid or written anywhere."""
    if value is None or (value == 0 and not isinstance(value, bool) and isinstance(value, (int, float))):
        return 5
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 2 ** 31:
        raise ProtocolError("bad_job", f"timeout must be a number of seconds from 0 to 2**31, got "
                                       f"{str(value)[:32]}")
    return min(2 ** 31 - 1, max(1, math.ceil(value)))


@dataclasses.dataclass(frozen=True)
class PublishJob(Message):
    """The body of ``publish``: Salt's publish load (a single ``module.function``; ``bad_job`` otherwise)."""

    tgt: str | list[str]
    fun: str
    arg: list[Any]
    kwarg: dict[str, Any]
    tgt_type: str = "glob"
    ret: str = ""
    timeout: int = 5

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a publish body", "bad_job")
        fun = load.get("fun")
        if not valid_function_name(fun):
            raise ProtocolError("bad_job", f"function {fun!r} is not a single module.function name")
        arg, kwarg, tgt_type = load.get("arg", []), load.get("kwarg", {}), load.get("tgt_type", "glob")
        if not isinstance(arg, list) or not isinstance(kwarg, dict) or not isinstance(tgt_type, str):
            raise ProtocolError("bad_job", "arg must be a list, kwarg a map and tgt_type a string")
        tgt = load.get("tgt")
        if not isinstance(tgt, (str, list)) or (isinstance(tgt, list) and not all(isinstance(t, str) for t in tgt)):
            raise ProtocolError("bad_job", "tgt must be a string or a list of strings")
        if not all(isinstance(name, str) for name in kwarg):
            raise ProtocolError("bad_job", "kwarg must map argument names (strings) to values")
        ret = load.get("ret")
        if ret is not None and not isinstance(ret, str):
            raise ProtocolError("bad_job", "ret must be a string")
        return cls(tgt=tgt, fun=str(fun), arg=arg, kwarg=kwarg, tgt_type=tgt_type, ret=ret or "",
                   timeout=_timeout(load.get("timeout")))

    @classmethod
    def decode(cls, body: bytes) -> Self:
        try:
            return cls.from_wire(codec.unpack(body, JOB_LIMITS))
        except codec.DecodeError as exc:
            raise ProtocolError(exc.reason, str(exc)) from None

    def encode(self) -> bytes:
        return codec.pack(self.to_wire())


@dataclasses.dataclass(frozen=True)
class JobQuery(Message):
    """The body of ``job_returns``."""

    jid: str

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(jid=text(mapping(load, "a job_returns body", "bad_job"), "jid", reason="bad_job", max_len=64))

    @classmethod
    def decode(cls, body: bytes) -> Self:
        try:
            return cls.from_wire(codec.unpack(body, codec.HEADER_LIMITS))
        except codec.DecodeError as exc:
            raise ProtocolError(exc.reason, str(exc)) from None

    def encode(self) -> bytes:
        return codec.pack(self.to_wire())


@dataclasses.dataclass(frozen=True)
class UpdateQuery(Message):
    """The body of ``fileserver_update``: Salt's ``backend=`` (names, ``-name`` to leave out; empty: every
    configured backend; ``git_pillar`` for the git ext_pillar remotes) and ``remotes`` (URL globs)."""

    backends: list[str]
    remotes: list[str]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a fileserver_update body", "bad_backend")
        backends = texts(load, "backends", reason="bad_backend", default=[])
        remotes = texts(load, "remotes", reason="bad_backend", default=[])
        if len(backends) > 16 or len(remotes) > 256 or any(len(x) > 1024 for x in backends + remotes):
            raise ProtocolError("bad_backend", "too many or too long backend names or remote patterns")
        return cls(backends=backends, remotes=remotes)

    @classmethod
    def decode(cls, body: bytes) -> Self:
        try:
            return cls.from_wire(codec.unpack(body, codec.HEADER_LIMITS))
        except codec.DecodeError as exc:
            raise ProtocolError(exc.reason, str(exc)) from None

    def encode(self) -> bytes:
        return codec.pack(self.to_wire())
