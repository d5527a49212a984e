"""``_auth``: the hello anyone may send, and the master's signed answer (docs/protocol.md §4).

The hello's and the reply's bytes are defined by the sans-I/O handshake (``runtime.crypt.handshake``),
which signs and verifies them: :class:`AuthHello` checks a hello with its ``parse_hello`` (so the
rules live once), and the master's ``AuthService`` then checks clock, signature and key store.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Self

from runtime.crypt.errors import HelloError
from runtime.crypt.handshake import OUTCOMES, parse_hello
from runtime.protocol.base import (
    MessageClass,
    ProtocolError,
    Reply,
    Request,
    binary,
    integer,
    mapping,
    optional_binary,
    text,
    wire,
)


@dataclasses.dataclass(frozen=True)
class AuthReply(Reply):
    """The master's answer to a hello, signed by the master whatever the outcome (§4.3)."""

    v: int
    outcome: str
    reason: str
    minion_id: str = dataclasses.field(metadata=wire("id"))
    nonce: bytes
    hello_hash: bytes
    master_pub: bytes
    now: int
    sid: bytes | None
    eph: bytes | None
    sealed: bytes | None
    sig: bytes

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "an auth reply")
        outcome = text(load, "outcome")
        if outcome not in OUTCOMES:
            raise ProtocolError("malformed", f"unknown auth outcome {outcome[:40]!r}")
        return cls(v=integer(load, "v"), outcome=outcome, reason=text(load, "reason"),
                   minion_id=text(load, "id"), nonce=binary(load, "nonce"), hello_hash=binary(load, "hello_hash"),
                   master_pub=binary(load, "master_pub"), now=integer(load, "now"),
                   sid=optional_binary(load, "sid"), eph=optional_binary(load, "eph"),
                   sealed=optional_binary(load, "sealed"), sig=binary(load, "sig"))


@dataclasses.dataclass(frozen=True)
class AuthHello(Request[AuthReply]):
    """A minion asks for a session (or for its key to be accepted)."""

    COMMAND: ClassVar[str] = "_auth"
    CLASS: ClassVar[MessageClass] = MessageClass.AUTH
    REPLY: ClassVar[type[Reply]] = AuthReply
    NOTES: ClassVar[str] = ("exactly these fields (§4.1); the reply is signed whatever the outcome, except for a "
                            "hello too malformed to bind it to (an unsigned `malformed` error)")

    v: int
    minion_id: str = dataclasses.field(metadata=wire("id"))
    pub: bytes
    eph: bytes
    nonce: bytes
    ts: int
    sig: bytes

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        try:
            hello = parse_hello(load)
        except HelloError as exc:
            raise ProtocolError(exc.reason, str(exc)) from None
        return cls(v=load["v"], minion_id=hello.minion_id, pub=hello.pub, eph=hello.eph, nonce=hello.nonce,
                   ts=hello.ts_ms, sig=load["sig"])
