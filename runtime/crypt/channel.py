"""Sealed requests and replies inside an authenticated session (``enc: aes`` envelopes).

Wire form: ``{"enc": "aes", "load": {"h": <header bytes>, "ct": <ciphertext>}}`` where the header
is a msgpack map kept as bytes so that it is authenticated exactly as sent (it is the AEAD
associated data):

- request (minion -> master, key ``c2s``, nonce ``c2s || ctr``): ``{"v", "sid", "ctr", "ts"}``, and
  last ``"k": "hb"`` on a heartbeat (the request proxy serves heartbeats in a lane of their own, so
  a busy master's queue of pillar compiles does not hold them back; the master refuses a marked
  request that is not a heartbeat)
- reply   (master -> minion, key ``s2c``, nonce ``s2c || re``):  ``{"v", "sid", "re", "ts"}``

``ctr`` counts the minion's requests from 1; the master admits each ``(sid, ctr)`` once across
all workers (replay window) and answers it with exactly one reply whose nonce and header reuse
that counter as ``re``: a reply is bound to its request and cannot be replayed for another.
``ts`` is milliseconds on the master's clock (the minion adds the offset learned at auth).

The minion id of a request is the session's, never anything inside the payload.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.errors import BadMessage, RemoteRefusal, UnknownSession
from runtime.crypt.handshake import SESSION_ID_SIZE, SessionKeys, now_ms

# the last entry of a heartbeat's header (runtime.transport_flows reads it)
HEARTBEAT_MARK: Mapping[str, str] = MappingProxyType({"k": "hb"})
# a marked request's ciphertext is at most this (a heartbeat's payload is some 30 bytes): refused
# before it is decrypted, so the heartbeat lane costs a worker little whatever a minion sends in it
MAX_HEARTBEAT_CT = 256


def _header(fields: dict[str, Any]) -> bytes:
    return codec.pack(fields)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class SealedMessage:
    """A parsed but not yet opened aes load."""

    sid: bytes
    counter: int
    ts_ms: int
    header: bytes
    ciphertext: bytes
    heartbeat: bool = False           # marked as a heartbeat (requests only)


def parse_sealed(load: Any, counter_field: str) -> SealedMessage:
    """Check the aes load shape and its header; ``counter_field`` is ``"ctr"`` or ``"re"``."""
    if not isinstance(load, dict) or set(load) != {"h", "ct"}:
        raise BadMessage('an aes load must be a map of exactly "h" and "ct"', "malformed")
    h, ct = load["h"], load["ct"]
    if not isinstance(h, bytes) or not isinstance(ct, bytes):
        raise BadMessage('"h" and "ct" must be byte strings', "malformed")
    try:
        header = codec.unpack(h, codec.HEADER_LIMITS)
    except codec.DecodeError as exc:
        raise BadMessage(f"header: {exc}", "malformed") from None
    fields = {"v", "sid", counter_field, "ts"}
    allowed = (fields, fields | set(HEARTBEAT_MARK)) if counter_field == "ctr" else (fields,)
    if not isinstance(header, dict) or set(header) not in allowed:
        raise BadMessage(f'header must have exactly the fields v, sid, {counter_field}, ts'
                         + (" (and k on a heartbeat)" if counter_field == "ctr" else ""), "malformed")
    marked = "k" in header
    if marked and header["k"] != HEARTBEAT_MARK["k"]:
        raise BadMessage('header k must be "hb"', "malformed")
    if marked and len(ct) > MAX_HEARTBEAT_CT:
        raise BadMessage(f"a request marked as a heartbeat holds at most {MAX_HEARTBEAT_CT} bytes", "malformed")
    if header["v"] != aead.PROTOCOL_VERSION or not _is_int(header["v"]):
        raise BadMessage(f"protocol version {header['v']!r} is not supported", "unsupported_version")
    sid, counter, ts = header["sid"], header[counter_field], header["ts"]
    if not isinstance(sid, bytes) or len(sid) != SESSION_ID_SIZE:
        raise BadMessage("header sid must be 16 bytes", "malformed")
    if not _is_int(counter) or not 1 <= counter <= aead.MAX_COUNTER:
        raise BadMessage(f"header {counter_field} must be a counter from 1", "malformed")
    if not _is_int(ts) or not 0 <= ts < 2 ** 62:
        raise BadMessage("header ts must be milliseconds since the epoch", "malformed")
    return SealedMessage(sid, counter, ts, h, ct, marked)


# ---------------------------------------------------------------- minion side

class ClientChannel:
    """The minion's end of a session: seal requests, open the replies to them.

    Thread-safe.  Usable only in the process that created it: a forked child would reuse
    counters, hence nonces, so :meth:`seal_request` refuses to run there (send through the parent).
    """

    def __init__(self, keys: SessionKeys, *, clock_offset_ms: int = 0,
                 limits: codec.Limits = codec.DEFAULT_LIMITS) -> None:
        self.keys = keys
        self.clock_offset_ms = clock_offset_ms
        self.limits = limits
        self._counter = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @property
    def sid(self) -> bytes:
        return self.keys.sid

    def seal_request(self, payload: Any, *, now: int | None = None, heartbeat: bool = False) -> tuple[int, bytes]:
        """Return ``(counter, envelope bytes)``.  Every call uses a new counter: on a retry, seal again.
        ``heartbeat``: mark the header (the payload must be a heartbeat, or the master refuses it)."""
        if os.getpid() != self._pid:
            raise RuntimeError("a session channel cannot be used in a forked process (nonce reuse)")
        with self._lock:
            self._counter += 1
            counter = self._counter
        ts = (now_ms() if now is None else now) + self.clock_offset_ms
        fields = {"v": aead.PROTOCOL_VERSION, "sid": self.keys.sid, "ctr": counter, "ts": ts}
        header = _header({**fields, **HEARTBEAT_MARK} if heartbeat else fields)
        ct = aead.seal(self.keys.c2s, aead.DOMAIN_C2S, counter, codec.pack(payload), header)
        return counter, codec.pack_envelope(codec.ENC_AES, {"h": header, "ct": ct})

    def open_reply(self, counter: int, data: bytes) -> Any:
        """Open the reply to request ``counter``.

        Raises :class:`RemoteRefusal` for a clear error reply (unauthenticated: just "failed"),
        :class:`BadMessage` for anything altered, for another request or another session, and
        ``codec.DecodeError`` for undecodable bytes."""
        env = codec.unpack_envelope(data, self.limits)
        if env.enc == codec.ENC_CLEAR:
            err = env.load.get("error")
            if isinstance(err, dict):
                raise RemoteRefusal(f"master refused the request: {str(err.get('message'))[:300]}",
                                    str(err.get("reason"))[:64])
            raise BadMessage("a clear reply to an encrypted request", "unexpected_clear")
        msg = parse_sealed(env.load, "re")
        if msg.sid != self.keys.sid:
            raise BadMessage("reply belongs to another session", "wrong_session")
        if msg.counter != counter:
            raise BadMessage(f"reply answers request {msg.counter}, not {counter}", "wrong_request")
        plain = aead.open_sealed(self.keys.s2c, aead.DOMAIN_S2C, msg.counter, msg.ciphertext, msg.header)
        return codec.unpack(plain, self.limits)


# ---------------------------------------------------------------- master side

class SessionLookup(Protocol):
    """What :class:`ServerChannel` needs from the master's shared session store."""

    def get_session(self, sid: bytes) -> SessionKeys | None:
        """The session's keys, or None when unknown or revoked."""

    def admit(self, sid: bytes, counter: int, ts_ms: int, now_ms: int) -> None:
        """Atomically, across all workers: the session still exists (else ``UnknownSession``),
        ``ts_ms`` is fresh and ``counter`` was never admitted (else ``ReplayRefused``)."""


@dataclass(frozen=True)
class Request:
    """An opened, admitted request: ``minion_id`` comes from the session."""

    session: SessionKeys
    counter: int
    ts_ms: int
    payload: Any
    heartbeat: bool = False           # its header was marked as a heartbeat's

    @property
    def minion_id(self) -> str:
        return self.session.minion_id


class ServerChannel:
    """The master's end: open requests (decrypt, then admit once), seal their replies.

    Keys are cached per process (``cache_size`` sessions); whether a session is still alive is
    decided by ``sessions.admit`` on every request, so a revocation takes effect at once.
    """

    def __init__(self, sessions: SessionLookup, *, limits: codec.Limits = codec.DEFAULT_LIMITS,
                 cache_size: int = 4096) -> None:
        self.sessions = sessions
        self.limits = limits
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, SessionKeys] = OrderedDict()
        self._lock = threading.Lock()

    def _keys(self, sid: bytes) -> SessionKeys:
        with self._lock:
            keys = self._cache.get(sid)
            if keys is not None:
                self._cache.move_to_end(sid)
                return keys
        keys = self.sessions.get_session(sid)
        if keys is None:
            raise UnknownSession("no such session (expired, revoked or from before a master restart): "
                                 "re-authenticate")
        with self._lock:
            self._cache[sid] = keys
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return keys

    def forget(self, sid: bytes) -> None:
        with self._lock:
            self._cache.pop(sid, None)

    def open_request(self, load: Any, *, now: int | None = None) -> Request:
        """Decrypt and admit an aes load.  Raises ``BadMessage``, ``UnknownSession``,
        ``ReplayRefused`` or ``codec.DecodeError`` (all with ``.reason``); answer those with a
        clear error reply (``codec.error_load``), never with a sealed one."""
        msg = parse_sealed(load, "ctr")
        keys = self._keys(msg.sid)
        plain = aead.open_sealed(keys.c2s, aead.DOMAIN_C2S, msg.counter, msg.ciphertext, msg.header)
        current = now_ms() if now is None else now
        try:
            self.sessions.admit(msg.sid, msg.counter, msg.ts_ms, current)
        except UnknownSession:
            self.forget(msg.sid)
            raise
        payload = codec.unpack(plain, self.limits)
        return Request(keys, msg.counter, msg.ts_ms, payload, msg.heartbeat)

    def seal_reply(self, request: Request, payload: Any, *, now: int | None = None) -> bytes:
        """The one reply to ``request`` (call once per request)."""
        ts = now_ms() if now is None else now
        keys = request.session
        header = _header({"v": aead.PROTOCOL_VERSION, "sid": keys.sid, "re": request.counter, "ts": ts})
        ct = aead.seal(keys.s2c, aead.DOMAIN_S2C, request.counter, codec.pack(payload), header)
        return codec.pack_envelope(codec.ENC_AES, {"h": header, "ct": ct})
