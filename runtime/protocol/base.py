"""What every message of the wire protocol is made of: its class, its errors, its field checks.

A message is a frozen dataclass.  Each field's name on the wire is the field's own name unless
its metadata says otherwise (``wire("return")``); ``to_wire()`` is derived from the fields, while
``from_wire()`` is written out per message with the checks below, so that every type, size and
shape rule of a message is in one place, read top to bottom.  ``from_wire`` raises
:class:`ProtocolError`, whose ``reason`` is the token the master answers with.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from runtime import codec


class MessageClass(enum.StrEnum):
    """Who may send a request, which decides how the master's request proxy queues and rate-limits it."""

    AUTH = "auth"          # anyone: hellos (and anything unknown or undecodable, rate-limited the same way)
    CLIENT = "client"      # a local user proving it holds its client key
    SESSION = "session"    # sealed under a minion's session; the minion id comes from the session


class ProtocolError(ValueError):
    """A message that is not what the protocol allows.  ``reason`` is a stable token (the error
    reply's ``reason``), ``message`` a sentence for the peer and the master's log."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# ---------------------------------------------------------------- field metadata

def wire(name: str) -> dict[str, Any]:
    """Field metadata: the field travels under ``name`` (``ret`` is ``"return"`` on the wire)."""
    return {"wire": name}


OMIT_NONE: dict[str, Any] = {"omit_none": True}   # field metadata: left out of to_wire() when None
LOCAL: dict[str, Any] = {"local": True}           # field metadata: what decoding noted, never sent


def wire_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("wire", f.name))


def wire_fields(cls: type[Message]) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` that travel on the wire, in order."""
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("local")]


def _to_wire_value(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_wire()
    if isinstance(value, tuple):
        return [_to_wire_value(item) for item in value]
    return value


@dataclasses.dataclass(frozen=True)
class Message:
    """Base of every request and reply."""

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        raise NotImplementedError

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in wire_fields(type(self)):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[wire_name(f)] = _to_wire_value(value)
        return out


@dataclasses.dataclass(frozen=True)
class Reply(Message):
    """A reply payload (clear for clear requests, sealed for session requests)."""


R = TypeVar("R", bound=Reply)


@dataclasses.dataclass(frozen=True)
class Request(Message, Generic[R]):
    """A request.  Each concrete request names its wire command, its :class:`MessageClass`, its
    reply class and the notes docs/protocol.md shows beside its fields."""

    COMMAND: ClassVar[str]
    CLASS: ClassVar[MessageClass]
    REPLY: ClassVar[type[Reply]]
    NOTES: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        return {"cmd": self.COMMAND, **super().to_wire()}   # cmd first, as saltpan has always packed it

    def read_reply(self, payload: Any) -> R:
        """The reply to this request, checked (:class:`ProtocolError` when it is not one)."""
        return cast(R, self.REPLY.from_wire(payload))


def encode_clear(request: Request[Any]) -> bytes:
    """A clear request body (``_auth``, ``publish``, ``job_returns``)."""
    if request.CLASS is MessageClass.SESSION:
        raise ValueError(f"{request.COMMAND} travels sealed, not clear")
    return codec.pack_envelope(codec.ENC_CLEAR, request.to_wire())


@dataclasses.dataclass(frozen=True)
class Ok(Reply):
    """``{"ok": true}``: the request was done."""

    ok: bool = True

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(ok=boolean(mapping(load), "ok"))


@dataclasses.dataclass(frozen=True)
class ErrorReply(Reply):
    """``{"error": {"reason", "message"}}``: how every refusal is answered."""

    reason: str
    message: str

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        error = mapping(mapping(load).get("error"), "error")
        return cls(reason=text(error, "reason"), message=text(error, "message"))

    def to_wire(self) -> dict[str, Any]:
        return {"error": {"reason": self.reason, "message": self.message}}


# ---------------------------------------------------------------- field checks used by from_wire

_ABSENT: Any = object()


def mapping(value: Any, what: str = "the message", reason: str = "malformed") -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(reason, f"{what} must be a map, got {type(value).__name__}")
    return value


def _get(load: Mapping[Any, Any], name: str, default: Any, reason: str) -> Any:
    value = load.get(name, _ABSENT)
    if value is _ABSENT:
        if default is _ABSENT:
            raise ProtocolError(reason, f"field {name!r} is missing")
        return default
    return value


def _wrong(name: str, wanted: str, value: Any, reason: str) -> ProtocolError:
    return ProtocolError(reason, f"field {name!r} must be {wanted}, got {type(value).__name__}")


def text(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", max_len: int | None = None,
         default: Any = _ABSENT) -> str:
    value = _get(load, name, default, reason)
    if not isinstance(value, str):
        raise _wrong(name, "a string", value, reason)
    if max_len is not None and len(value) > max_len:
        raise ProtocolError(reason, f"field {name!r} is longer than {max_len} characters")
    return value


def optional_text(load: Mapping[Any, Any], name: str, *, reason: str = "malformed") -> str | None:
    value = load.get(name)
    if value is not None and not isinstance(value, str):
        raise _wrong(name, "a string or nil", value, reason)
    return value


def integer(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", minimum: int | None = None,
            default: Any = _ABSENT) -> int:
    value = _get(load, name, default, reason)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(name, "an integer", value, reason)
    if minimum is not None and value < minimum:
        raise ProtocolError(reason, f"field {name!r} must be at least {minimum}")
    return value


def optional_integer(load: Mapping[Any, Any], name: str, *, reason: str = "malformed") -> int | None:
    value = load.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise _wrong(name, "an integer or nil", value, reason)
    return value


def number(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", default: Any = _ABSENT) -> float:
    value = _get(load, name, default, reason)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _wrong(name, "a number", value, reason)
    return float(value)


def boolean(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", default: Any = _ABSENT) -> bool:
    value = _get(load, name, default, reason)
    if not isinstance(value, bool):
        raise _wrong(name, "true or false", value, reason)
    return value


def binary(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", size: int | None = None,
           default: Any = _ABSENT) -> bytes:
    value = _get(load, name, default, reason)
    if not isinstance(value, bytes):
        raise _wrong(name, "a byte string", value, reason)
    if size is not None and len(value) != size:
        raise ProtocolError(reason, f"field {name!r} must be {size} bytes")
    return value


def optional_binary(load: Mapping[Any, Any], name: str, *, reason: str = "malformed") -> bytes | None:
    value = load.get(name)
    if value is not None and not isinstance(value, bytes):
        raise _wrong(name, "a byte string or nil", value, reason)
    return value


def submap(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", default: Any = _ABSENT
           ) -> dict[Any, Any]:
    value = _get(load, name, default, reason)
    if not isinstance(value, dict):
        raise _wrong(name, "a map", value, reason)
    return value


def optional_submap(load: Mapping[Any, Any], name: str, *, reason: str = "malformed") -> dict[Any, Any] | None:
    value = load.get(name)
    if value is not None and not isinstance(value, dict):
        raise _wrong(name, "a map or nil", value, reason)
    return value


def array(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", max_items: int | None = None,
          default: Any = _ABSENT) -> list[Any]:
    value = _get(load, name, default, reason)
    if not isinstance(value, list):
        raise _wrong(name, "a list", value, reason)
    if max_items is not None and len(value) > max_items:
        raise ProtocolError(reason, f"field {name!r} holds more than {max_items} items")
    return value


def texts(load: Mapping[Any, Any], name: str, *, reason: str = "malformed", default: Any = _ABSENT) -> list[str]:
    value = array(load, name, reason=reason, default=default)
    if not all(isinstance(item, str) for item in value):
        raise ProtocolError(reason, f"field {name!r} must be a list of strings")
    return value
