"""Requests of local clients (``saltpan run``, ``saltpan jobs``): ``publish`` and ``job_returns``.

Each carries a packed ``body`` and a ``proof`` that the sender holds its user's client key
(docs/protocol.md §8).  The body is decoded only once the proof verified:
:meth:`PublishJob.decode` and :meth:`JobQuery.decode` are its checks.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, ClassVar, Self

from runtime import codec
from runtime.crypt.clientkey import PROOF_NONCE_SIZE
from runtime.protocol.base import (
    Message,
    MessageClass,
    ProtocolError,
    Reply,
    Request,
    binary,
    integer,
    mapping,
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

