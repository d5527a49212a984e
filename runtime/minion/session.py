"""One session with the master (Swarmkit's agent session, seed 004).

A session is one round of registration: authenticate (waiting while the key is
pending), receive the heartbeat period and the publish key, then heartbeat,
subscribe and listen concurrently.  Any failure closes the whole session; the
caller rebuilds it after a delay drawn from ``Backoff``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from runtime import codec, protocol, transport
from runtime.config import option
from runtime.crypt.channel import ClientChannel
from runtime.crypt.errors import AuthReplyError, CryptoError, RemoteRefusal
from runtime.crypt.handshake import AuthGrant, AuthResult, finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.crypt.trust import MasterTrust
from runtime.transport_async import AsyncRequestClient
from runtime.transport_hellos import MAX_RETRY_S

log = logging.getLogger("saltpan.minion.session")

R = TypeVar("R", bound=protocol.Reply)


class SessionError(Exception):
    """The session is over (master gone, key revoked, refused ...): rebuild it."""


class KeyNotAccepted(SessionError):
    """The master did not accept our hello: ``outcome`` ``rejected`` or ``denied`` (the key), or
    ``refused`` (``reason`` says why: the key store unreachable, the pending list full ...)."""

    def __init__(self, message: str, outcome: str) -> None:
        super().__init__(message)
        self.outcome = outcome


class MasterUnreachable(SessionError):
    """The master did not answer (no auth reply, heartbeats missed): with ``master_type:
    failover`` the minion moves to the next master."""


class MasterBusy(SessionError):
    """The master's request server refused the hello for now (``busy``, ``rate_limited``): try
    again within the re-authentication window, or the window the refusal named (``retry_s``,
    runtime/transport_hellos.py), without growing the backoff."""

    def __init__(self, message: str, retry_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_s = retry_s


def retry_hint(refusal: dict[Any, Any]) -> float:
    """A refusal's ``retry_s``: a number of seconds up to ``MAX_RETRY_S``, else 0 (none)."""
    value = refusal.get("retry_s")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_RETRY_S:
        return 0.0
    return float(value)


class MasterRestarted(SessionError):
    """The master announced a new boot (runtime/minion/watch.py): re-authenticate within the
    window it announced."""

    def __init__(self, message: str, spread_s: float) -> None:
        super().__init__(message)
        self.spread_s = spread_s


class FailBack(SessionError):
    """The first master of a failover list answers again: move back to it, with this session."""

    def __init__(self, message: str, session: Session) -> None:
        super().__init__(message)
        self.session = session


BUSY_REASONS = ("busy", "rate_limited")


@dataclass
class Backoff:
    """Swarmkit's backoff: after a failure ``backoff = min(initial + 2 * backoff, maximum)``;
    the next attempt waits a random delay in [0, backoff) (or exactly backoff when not
    randomized); a session that registers resets it to 0."""

    initial: float
    maximum: float
    randomize: bool = True
    value: float = 0.0

    @classmethod
    def from_opts(cls, opts: Mapping[str, Any]) -> Backoff:
        """From Salt's keys: recon_default and recon_max are milliseconds (Salt's defaults 1000 and
        10000), recon_randomize a boolean."""
        return cls(option(opts, "recon_default", float) / 1000.0, option(opts, "recon_max", float) / 1000.0,
                   option(opts, "recon_randomize", bool))

    def failed(self) -> float:
        self.value = min(self.initial + 2 * self.value, self.maximum)
        return self.value

    def reset(self) -> None:
        self.value = 0.0

    def delay(self, rng: random.Random | None = None) -> float:
        if self.value <= 0:
            return 0.0
        if not self.randomize:
            return self.value
        return (rng or random).uniform(0, self.value)


MAX_HEARTBEAT_S = 3600.0   # whatever a master says, a minion heartbeats at least hourly


def _bounded_period(seconds: float) -> float:
    return min(MAX_HEARTBEAT_S, max(0.05, float(seconds)))


class Session:
    """An authenticated channel to the master's request server."""

    def __init__(self, client: AsyncRequestClient, channel: ClientChannel, result: AuthResult,
                 request_timeout: float, request_tries: int):
        self.client = client
        self.channel = channel
        self.result = result
        self.grant: AuthGrant = result.grant  # type: ignore[assignment]
        self.request_timeout = request_timeout
        self.request_tries = request_tries
        self.mark_heartbeats = True     # until a master from before the mark refuses a marked header
        self._period = _bounded_period(self.grant.heartbeat_s)

    @property
    def heartbeat(self) -> float:
        """Seconds between heartbeats: the auth grant's, then the last heartbeat reply's."""
        return self._period

    def adopt_period(self, seconds: float) -> None:
        """The period the master asks for in a heartbeat reply: it grows with the master's fleet
        (runtime/master/heartbeats.py), so minions of a storm's first seconds slow down with it."""
        self._period = _bounded_period(seconds)

    async def request(self, message: protocol.SessionRequest[R], timeout: float | None = None,
                      tries: int | None = None) -> R:
        """Send a sealed request and return the master's reply to it, checked.

        Raises transport.RequestTimeout when the master does not answer, SessionError when the
        master refuses the session (unknown/revoked), RemoteRefusal for other refusals (and for
        a reply that is not the one the request asks for: ``bad_reply``).
        """
        payload = message.to_wire()
        # served in the proxy's heartbeat lane (docs/protocol.md §5)
        heartbeat = self.mark_heartbeats and isinstance(message, protocol.Heartbeat)
        (counter, reply) = await self.client.request_with(lambda: self.channel.seal_request(payload,
                                                                                            heartbeat=heartbeat),
                                                          timeout=timeout or self.request_timeout,
                                                          tries=tries or self.request_tries)
        try:
            data = self.channel.open_reply(counter, reply)
        except RemoteRefusal as exc:
            if exc.reason in ("unknown_session", "revoked", "replayed", "too_old", "stale", "future"):
                raise SessionError(f"master refused the session: {exc}") from None
            if heartbeat and exc.reason == "malformed":
                # a master older than the heartbeat mark refuses the marked header: this session's
                # heartbeats go unmarked (in the queue of the other requests), as before the mark
                log.warning("the master refused a marked heartbeat (%s): an older saltpan master? Heartbeats "
                            "go unmarked in this session; upgrade the master", exc)
                self.mark_heartbeats = False
                return await self.request(message, timeout, tries)
            raise
        except (CryptoError, codec.DecodeError) as exc:
            # not a reply of our master to this request (forged, spliced, clear): never used; the
            # session is rebuilt, as after any other failure on the path
            raise SessionError(f"reply refused: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise RemoteRefusal(str(data["error"].get("message")), str(data["error"].get("reason")))
        try:
            return message.read_reply(data)
        except protocol.ProtocolError as exc:
            raise RemoteRefusal(f"the master's reply to {message.COMMAND} is malformed: {exc}", "bad_reply") from None

    def close(self) -> None:
        self.client.close()


class HelloLink:
    """The connection a minion's hellos to one master go on, kept open across ``busy`` refusals:
    a minion turned away comes back on the connection it has, instead of each refusal costing it
    and the master a new TCP and ZeroMQ handshake (at 10,000 minions launched at once, more than
    10,000 refusals: the master's listen queue overflowed and dropped connection attempts, each
    one retried by the kernel a second or more later).  The session that a hello opens takes the
    connection over (:meth:`take`); any other failure closes it."""

    def __init__(self, address: str, opts: dict[str, Any], ctx: Any = None) -> None:
        self.address = address
        self.opts = opts
        self.ctx = ctx
        self._client: AsyncRequestClient | None = None

    def client(self) -> AsyncRequestClient:
        if self._client is None:
            self._client = AsyncRequestClient(self.address, ctx=self.ctx, timeout=option(self.opts, "auth_timeout",
                                                                                          float),
                                              tries=option(self.opts, "auth_tries", int))
        return self._client

    def take(self) -> AsyncRequestClient:
        """The connection, now the caller's (a session's): the next hello opens a new one."""
        client, self._client = self.client(), None
        return client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


async def authenticate(address: str, identity: Identity, minion_id: str, trust: MasterTrust, opts: dict[str, Any],
                       stop: asyncio.Event, ctx: Any = None, log_prefix: str = "",
                       link: HelloLink | None = None) -> Session:
    """Authenticate until accepted; raises SessionError on refusal or silence.  The hellos go on
    ``link``'s connection (to ``address``), left open when the master refuses them ``busy`` (a
    connection of their own otherwise, closed on any failure)."""
    hello = link if link is not None else HelloLink(address, opts, ctx)
    client = hello.client()
    offset = 0
    wait = option(opts, "acceptance_wait_time", float)
    wait_max = option(opts, "acceptance_wait_time_max", float) or wait
    try:
        while not stop.is_set():
            attempt = start_auth(identity, minion_id, clock_offset_ms=offset)
            try:
                reply = await client.request(protocol.encode_clear(protocol.AuthHello.from_wire(attempt.load)))
            except transport.RequestTimeout as exc:
                raise MasterUnreachable(f"no answer from the master at {address}: {exc}") from None
            try:
                envelope = codec.unpack_envelope(reply, codec.Limits(max_size=256 * 1024, max_items=64,
                                                                     max_depth=4))
                refusal = envelope.load.get("error")
                if isinstance(refusal, dict) and refusal.get("reason") in BUSY_REASONS:
                    # unsigned, so possibly forged: it only makes us wait, as a dropped packet would
                    raise MasterBusy(f"the master at {address} is busy ({refusal.get('reason')})",
                                     retry_hint(refusal))
                result = finish_auth(attempt, envelope.load, trust)
            except AuthReplyError as exc:
                raise SessionError(f"auth reply refused: {exc}") from None
            except (CryptoError, codec.DecodeError) as exc:
                raise SessionError(f"auth failed: {exc}") from None
            offset = result.clock_offset_ms
            if result.outcome == "accepted":
                if result.session is None:
                    raise SessionError("auth reply: accepted without session keys")
                log.info("%sauthenticated with the master (session %s)", log_prefix, result.session.sid.hex()[:8])
                channel = ClientChannel(result.session, clock_offset_ms=offset)
                return Session(hello.take(), channel, result, option(opts, "request_timeout", float),
                               option(opts, "request_tries", int))
            if result.outcome == "pending":
                log.warning("%skey is pending acceptance on the master; retrying in %.1f s", log_prefix, wait)
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                except TimeoutError:
                    pass
                wait = min(wait * 2, wait_max) if wait_max > wait else wait
                continue
            if result.outcome == "refused" and result.reason == "clock_skew":
                continue
            raise KeyNotAccepted(f"master answered {result.outcome}" + (f" ({result.reason})" if result.reason
                                                                        else ""), result.outcome)
        raise SessionError("stopping")
    except MasterBusy:
        if link is None:
            hello.close()
        raise
    except BaseException:
        hello.close()
        raise
