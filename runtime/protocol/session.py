"""Requests a minion sends through its session, except the file server's (``files.py``).

Every one travels sealed (docs/protocol.md §5); the master acts for the minion id bound to the
session, never for an id named in the payload (an ``id`` field naming another minion is refused
``id_mismatch`` before the message is read: see ``registry.parse_session_request``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Protocol, Self

from runtime.protocol.base import (
    LOCAL,
    OMIT_NONE,
    Message,
    MessageClass,
    Ok,
    ProtocolError,
    R,
    Reply,
    Request,
    array,
    binary,
    boolean,
    integer,
    mapping,
    number,
    optional_binary,
    optional_integer,
    optional_submap,
    optional_text,
    submap,
    text,
    wire,
)

MAX_EVENTS_PER_REQUEST = 100
PILLAR_OVERRIDES = ("pillar_override", "ext", "extra_minion_data")   # Salt's; never honoured from a minion


@dataclasses.dataclass(frozen=True)
class SessionRequest(Request[R]):
    """A request sealed under a minion's session."""

    CLASS: ClassVar[MessageClass] = MessageClass.SESSION


class Requester(Protocol):
    """One sealed request to the master through the minion's session, answered with its checked reply
    (``Minion.call_master``): how a minion's job code (the file client, the mine) asks the master."""

    def __call__(self, message: SessionRequest[R]) -> R: ...


# ---------------------------------------------------------------- keys and presence

@dataclasses.dataclass(frozen=True)
class HeartbeatReply(Reply):
    now: int
    heartbeat: float
    epoch: int
    publish_key: bytes | None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a heartbeat reply")
        return cls(now=integer(load, "now"), heartbeat=number(load, "heartbeat"), epoch=integer(load, "epoch"),
                   publish_key=optional_binary(load, "publish_key"))


@dataclasses.dataclass(frozen=True)
class Heartbeat(SessionRequest[HeartbeatReply]):
    """The minion is alive; it holds the publish key of ``epoch``."""

    COMMAND: ClassVar[str] = "_heartbeat"
    REPLY: ClassVar[type[Reply]] = HeartbeatReply
    NOTES: ClassVar[str] = ("`publish_key` only when the minion's epoch is old, read with `publish_key_for(sid)` "
                            "(refused once revoked); feeds presence (`last_seen`)")

    epoch: int | None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(epoch=optional_integer(mapping(load), "epoch"))


@dataclasses.dataclass(frozen=True)
class PublishKeyReply(Reply):
    epoch: int
    publish_key: bytes

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a publish key reply")
        return cls(epoch=integer(load, "epoch"), publish_key=binary(load, "publish_key"))


@dataclasses.dataclass(frozen=True)
class PublishKeyRequest(SessionRequest[PublishKeyReply]):
    """The current publish key, after a publication under a newer epoch (``NeedPublishKey``)."""

    COMMAND: ClassVar[str] = "_publish_key"
    REPLY: ClassVar[type[Reply]] = PublishKeyReply
    NOTES: ClassVar[str] = "`publish_key_for(sid)`: refused `unknown_session` once the minion has none"

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        mapping(load)
        return cls()


# ---------------------------------------------------------------- jobs

@dataclasses.dataclass(frozen=True)
class JobReturn(SessionRequest[Ok]):
    """A job's result."""

    COMMAND: ClassVar[str] = "_return"
    REPLY: ClassVar[type[Reply]] = Ok
    NOTES: ClassVar[str] = ("fires `salt/job/<jid>/ret/<id>` with the session's minion id; the master refuses returns "
                            "for jids it did not send to this minion (`not_targeted`) and a second return "
                            "(`duplicate`)")

    jid: str
    fun: str | None = dataclasses.field(metadata=OMIT_NONE)
    fun_args: list[Any]
    ret: Any = dataclasses.field(metadata=wire("return"))
    retcode: int
    success: bool
    out: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(jid=text(load, "jid", reason="unknown_job", max_len=64), fun=optional_text(load, "fun"),
                   fun_args=array(load, "fun_args", default=[]), ret=load.get("return"),
                   retcode=integer(load, "retcode", default=0), success=boolean(load, "success", default=True),
                   out=optional_text(load, "out"))


# ---------------------------------------------------------------- minion data

@dataclasses.dataclass(frozen=True)
class PillarReply(Reply):
    pillar: dict[str, Any]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(pillar=submap(mapping(load, "a pillar reply"), "pillar"))


@dataclasses.dataclass(frozen=True)
class PillarRequest(SessionRequest[PillarReply]):
    """The minion's pillar, compiled for the session's id."""

    COMMAND: ClassVar[str] = "_pillar"
    REPLY: ClassVar[type[Reply]] = PillarReply
    NOTES: ClassVar[str] = ("compiled for the session's id with the grains sent (stored in the minion data cache, "
                            "`id` forced to the session's) or else the cached ones; the result is cached for "
                            "targeting; with `pillar_cache` a copy younger than `pillar_cache_ttl` is returned "
                            "unless `clean_cache` (`saltutil.refresh_pillar`); Salt's `pillar_override`, `ext` and "
                            "`extra_minion_data` are ignored (logged): nothing a minion sends reaches ext_pillar "
                            "(classes 2, 11)")

    grains: dict[str, Any] | None = dataclasses.field(metadata=OMIT_NONE)
    saltenv: str | None
    pillarenv: str | None
    clean_cache: bool = False
    ignored: tuple[str, ...] = dataclasses.field(default=(), metadata=LOCAL)   # override fields that were sent

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(grains=optional_submap(load, "grains", reason="bad_grains"),
                   saltenv=optional_text(load, "saltenv"), pillarenv=optional_text(load, "pillarenv"),
                   clean_cache=boolean(load, "clean_cache", default=False),
                   ignored=tuple(sorted(name for name in PILLAR_OVERRIDES if name in load)))


@dataclasses.dataclass(frozen=True)
class GrainsUpload(SessionRequest[Ok]):
    """The minion's grains, for the master's targeting and pillar (``saltutil.refresh_grains``)."""

    COMMAND: ClassVar[str] = "_grains"
    REPLY: ClassVar[type[Reply]] = Ok
    NOTES: ClassVar[str] = ("stored in the minion data cache with `id` forced to the session's; over "
                            "`max_minion_data_size` bytes of JSON refused `too_large` and the stale copy dropped (so "
                            "are grains attached to `_pillar`)")

    grains: dict[str, Any]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(grains=submap(mapping(load), "grains", reason="bad_grains"))


# ---------------------------------------------------------------- events

@dataclasses.dataclass(frozen=True)
class MinionEvent(Message):
    """One event of ``_minion_event``."""

    tag: str
    data: dict[str, Any]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "an event", "bad_event")
        return cls(tag=text(load, "tag", reason="bad_event"), data=submap(load, "data", reason="bad_event",
                                                                             default={}))


@dataclasses.dataclass(frozen=True)
class EventsReply(Reply):
    ok: bool
    fired: int

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "an events reply")
        return cls(ok=boolean(load, "ok"), fired=integer(load, "fired"))


@dataclasses.dataclass(frozen=True)
class MinionEvents(SessionRequest[EventsReply]):
    """Events for the master's bus."""

    COMMAND: ClassVar[str] = "_minion_event"
    REPLY: ClassVar[type[Reply]] = EventsReply
    NOTES: ClassVar[str] = (f"at most {MAX_EVENTS_PER_REQUEST} events; an event that is not a map with a string `tag` "
                            "and a map `data` is skipped; fired on the master bus with `data[\"id\"]` set from the "
                            "session; never turned into jobs or master actions (class 3): tags in the master's "
                            "namespaces (`salt/` except the sender's own `salt/minion/<id>/` and `salt/beacon/<id>/`, "
                            "a bare job id), however written (case, doubled or trailing slashes, backslashes, blanks, "
                            "invisible or look-alike characters), are refused `reserved_tag`, empty, over-long or "
                            "control-character tags `invalid_tag` (`runtime/master/event_tags.py`); data over "
                            "`max_event_size` trimmed as Salt trims it (`\"VALUE_TRIMMED\"`), dropped if still too "
                            "large; `fired` counts the events put on the bus")

    events: tuple[MinionEvent, ...]
    skipped: int = dataclasses.field(default=0, metadata=LOCAL)   # malformed events left out

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        raw = mapping(load).get("events")
        if not isinstance(raw, list) or len(raw) > MAX_EVENTS_PER_REQUEST:
            raise ProtocolError("bad_event", f"events must be a list of at most {MAX_EVENTS_PER_REQUEST}")
        events: list[MinionEvent] = []
        for item in raw:
            try:
                events.append(MinionEvent.from_wire(item))
            except ProtocolError:
                continue
        return cls(events=tuple(events), skipped=len(raw) - len(events))


# ---------------------------------------------------------------- the Salt mine

MAX_MINE_FUNCTIONS = 100        # functions named in one `_mine_get` or stored by one `_mine`
MAX_MINE_NAME = 256             # characters of a mine function name (an alias or module.function)
MINE_TARGET_TYPES = ("glob", "pcre", "list", "grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact",
                     "ipcidr", "compound", "nodegroup")


def _mine_names(value: Any, what: str) -> list[str]:
    names = value if isinstance(value, list) else [value]
    if not names or len(names) > MAX_MINE_FUNCTIONS or not all(
            isinstance(n, str) and 0 < len(n) <= MAX_MINE_NAME for n in names):
        raise ProtocolError("bad_mine", f"{what} must be a function name or a list of at most {MAX_MINE_FUNCTIONS} "
                                        f"names of at most {MAX_MINE_NAME} characters")
    return names


@dataclasses.dataclass(frozen=True)
class MineStore(SessionRequest[Ok]):
    """The minion's mine data: ``{function or alias: its result}`` (``mine.update``, ``mine.send``)."""

    COMMAND: ClassVar[str] = "_mine"
    REPLY: ClassVar[type[Reply]] = Ok
    NOTES: ClassVar[str] = ("stored in the minion data cache (bank `mine`) under the session's id, merged over what "
                            "it held unless `clear`; an entry may carry Salt's minion-side ACL (`__saltmine_acl__`, "
                            "`allow_tgt`, `allow_tgt_type`); over `max_minion_data_size` bytes of JSON refused "
                            "`too_large` and the stored mine dropped; at most "
                            f"{MAX_MINE_FUNCTIONS} functions")

    data: dict[str, Any]
    clear: bool = False

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        data = submap(load, "data", reason="bad_mine")
        if data:
            _mine_names(list(data), "the keys of data")
        return cls(data=data, clear=boolean(load, "clear", default=False))


@dataclasses.dataclass(frozen=True)
class MineData(Reply):
    """``{minion: data}`` for one function, ``{function: {minion: data}}`` for several (Salt's shapes)."""

    data: dict[str, Any]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(data=submap(mapping(load, "a mine reply"), "data"))


@dataclasses.dataclass(frozen=True)
class MineGet(SessionRequest[MineData]):
    """Other minions' mine data (``mine.get TGT FUN [TGT_TYPE]``)."""

    COMMAND: ClassVar[str] = "_mine_get"
    REPLY: ClassVar[type[Reply]] = MineData
    NOTES: ClassVar[str] = ("the functions the master's `mine_get` ACL grants the session's id (none: `{}`); the "
                            "minions matching `tgt` in the key store and minion data cache (a minion without "
                            "cached data matches no grain or pillar target; `pillar` means `pillar_exact`); an "
                            "entry whose `allow_tgt` does not match the session's id is left out; `fun` a name, a "
                            "comma-separated string or a list")

    tgt: str | list[str]
    fun: str | list[str]
    tgt_type: str = "glob"

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        tgt = load.get("tgt")
        if not isinstance(tgt, (str, list)) or (isinstance(tgt, list) and not all(isinstance(t, str) for t in tgt)):
            raise ProtocolError("bad_mine", "tgt must be a string or a list of strings")
        fun = load.get("fun")
        _mine_names(fun, "fun")
        tgt_type = text(load, "tgt_type", reason="bad_mine", default="glob")
        if tgt_type not in MINE_TARGET_TYPES:
            raise ProtocolError("bad_mine", f"unknown tgt_type {tgt_type[:40]!r} (known: "
                                            f"{', '.join(MINE_TARGET_TYPES)})")
        return cls(tgt=tgt, fun=fun, tgt_type=tgt_type)


@dataclasses.dataclass(frozen=True)
class MineDelete(SessionRequest[Ok]):
    """Drop one function from the minion's mine (``mine.delete``)."""

    COMMAND: ClassVar[str] = "_mine_delete"
    REPLY: ClassVar[type[Reply]] = Ok
    NOTES: ClassVar[str] = "removes `fun` from the session's minion's entry in bank `mine`"

    fun: str

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(fun=text(mapping(load), "fun", reason="bad_mine", max_len=MAX_MINE_NAME))


@dataclasses.dataclass(frozen=True)
class MineFlush(SessionRequest[Ok]):
    """Drop the minion's whole mine (``mine.flush``)."""

    COMMAND: ClassVar[str] = "_mine_flush"
    REPLY: ClassVar[type[Reply]] = Ok
    NOTES: ClassVar[str] = "removes the session's minion's entry in bank `mine`"

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        mapping(load)
        return cls()
