"""`saltpan minion`: sessions with the master, jobs, returns, in-memory pillar.

The minion keeps one session at a time (runtime.minion.session): after it
registers, three tasks run concurrently — heartbeat, subscribe (jobs from the
publisher) and listen (the local event bus: ``pillar_refresh`` ...).  Any failure
closes the session and a new one is built after a backoff delay.  Jobs run in
threads (or forked processes with ``multiprocessing: True``) and return over the
session; returns that could not be delivered are kept and sent after the next
session registers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import random
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import zmq
import zmq.asyncio

from compiler import match
from runtime import codec, protocol, transport
from runtime.config import ConfigError, option, optional_option
from runtime.crypt.errors import CryptoError, NeedPublishKey, PublicationRefused, RemoteRefusal
from runtime.crypt.identity import Identity, load_or_create_identity
from runtime.crypt.publish import PublicationReceiver, PublishKey
from runtime.crypt.trust import MasterTrust
from runtime.minion.jobs import JobRegistry, RunningJob
from runtime.minion.masters import MasterList
from runtime.minion.session import (
    BUSY_REASONS,
    Backoff,
    FailBack,
    HelloLink,
    KeyNotAccepted,
    MasterBusy,
    MasterRestarted,
    MasterUnreachable,
    Session,
    SessionError,
    authenticate,
)
from runtime.minion.watch import MasterWatch
from runtime.protocol import errors as protocol_errors
from runtime.ratelog import RateLimitedLog
from runtime.state_returns import STATE_FUNCTIONS, state_retcode

if TYPE_CHECKING:
    from compiler.pillar import PillarCompiler
    from compiler.roots import FileSource
    from runtime.minion.remote import RemoteFiles
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.minion")

# with its publish connection up, a master answering no heartbeat is left after this many
# master_alive_interval (a slow master is not a dead one: heartbeat_loop)
SLOW_MASTER_FACTOR = 3

MAX_PENDING_RETURNS = 1000

R = TypeVar("R", bound=protocol.Reply)


# sealed refusals of a return that no resend can change: the master stored one already (the reply to
# the first try was lost), the job is unknown or was not sent to this minion (docs/protocol.md)
FINAL_RETURN_REFUSALS = frozenset({"duplicate", "unknown_job", "not_targeted"})
# ... and the refusals of a return the master cannot even decode (too deep, too long, malformed):
# resent, it would be refused the same way every time; any other refusal is for now (a busy queue,
# the store unreachable) and the return is kept
DROPPED_RETURN_REFUSALS = FINAL_RETURN_REFUSALS | frozenset(
    token for token, error in protocol_errors.ERRORS.items() if error.stage == "decode")


class LocalEvent:
    def __init__(self, tag: str, data: dict[str, Any], done: threading.Event | None = None):
        self.tag = tag
        self.data = data
        self.done = done


class Minion:
    """One minion. Several can share an event loop, a zmq context and an executor (swarm)."""

    def __init__(self, opts: dict[str, Any], *, ctx: zmq.asyncio.Context | None = None,
                 executor: concurrent.futures.Executor | None = None, identity: Identity | None = None,
                 grains: dict[str, Any] | None = None, quiet: bool = False, trust: MasterTrust | None = None):
        """``trust``: the master key it trusts, when not its own ``<pki_dir>/minion_master.pub``
        (``saltpan swarm``: one for all its minions, kept without fsync)."""
        self.opts = opts
        self.id = str(opts.get("id") or socket.getfqdn())
        opts["id"] = self.id
        self.ctx = ctx or zmq.asyncio.Context.instance()
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(max_workers=32,
                                                                         thread_name_prefix="job")
        if identity is None:
            identity, created = load_or_create_identity(opts["pki_dir"], "minion")
            if created:
                log.info("created the minion key pair in %s (fingerprint %s)", opts["pki_dir"],
                            identity.fingerprint)
        self.identity = identity
        self.trust = trust or MasterTrust(opts["pki_dir"], optional_option(opts, "master_finger", str))
        if grains is None:
            from runtime import grains as grains_mod

            grains = grains_mod.minion_grains(opts, self.id)
        self.grains = grains
        self.pillar: dict[str, Any] = {}
        self.jobs = JobRegistry()
        self.receiver: PublicationReceiver | None = None
        self.session: Session | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.events: asyncio.Queue[LocalEvent] | None = None
        self.registered: asyncio.Event | None = None   # set while a registered session is up (the mine waits on it)
        self.pending_returns: deque[protocol.JobReturn] = deque(maxlen=MAX_PENDING_RETURNS)
        self.backoff = Backoff.from_opts(opts)  # Salt's recon_* keys, in milliseconds
        self.masters = MasterList.from_opts(opts)
        self.reauth_delay: float | None = None  # drawn after a restart announcement, replaces the backoff
        self.spread_s = 0.0                       # the re-authentication window the master last announced
        self.clock_offset_ms = 0                  # master clock minus ours, from the last auth reply
        self.refusals = RateLimitedLog(log, option(opts, "refusal_log_interval", float))
        self.started = False            # registered once (grains sent, pillar fetched)
        self.flushing = False           # flush_pending running
        self.start_fired = False        # minion_start and salt/minion/<id>/start taken by a master
        self.abandoned: list[dict[str, Any]] = []
        self.sessions_registered = 0
        self.prefix = "" if not quiet else f"[{self.id}] "
        self._remote_files: RemoteFiles | None = None
        self._local_pillar_compiler: PillarCompiler | None = None

    # -- addresses ------------------------------------------------------------------
    def ret_address(self) -> str:
        return self.masters.current.ret_address

    def pub_address(self) -> str:
        return self.masters.current.pub_address

    # -- lifecycle ------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        self.loop = asyncio.get_running_loop()
        self.events = asyncio.Queue()
        self.registered = asyncio.Event()
        mine = asyncio.create_task(self.mine_loop(stop), name="mine")
        try:
            await self.session_loop(stop)
        finally:
            mine.cancel()
            await asyncio.gather(mine, return_exceptions=True)
        self.abandoned = self.jobs.running()  # still running as the minion stops

    async def session_loop(self, stop: asyncio.Event) -> None:
        watch: MasterWatch | None = None
        link: HelloLink | None = None       # the hellos' connection, kept across busy refusals
        ready: Session | None = None        # opened by a failback probe: used instead of a new hello
        busy_streak = 0
        try:
            while not stop.is_set():
                master = self.masters.current
                if watch is None or watch.address != master.pub_address:
                    if watch is not None:
                        watch.close()
                    watch = MasterWatch(self.ctx, master.pub_address, self.id)
                if link is None or link.address != master.ret_address:
                    if link is not None:
                        link.close()
                    link = HelloLink(master.ret_address, self.opts, self.ctx)
                if ready is None:
                    if await self.pause(watch, stop):
                        break
                    try:
                        session = await authenticate(master.ret_address, self.identity, self.id, self.trust,
                                                     self.opts, stop, self.ctx, self.prefix, link)
                    except KeyNotAccepted as exc:
                        self.refusals.warning(f"auth:{exc}", "%s%s", self.prefix, exc)
                        self.backoff.failed()
                        if exc.outcome in ("rejected", "denied"):
                            # retried slowly (an operator may accept the key later): the reconnect
                            # backoff, never less than a pending key's wait, give or take half of it
                            # (recon_* are milliseconds: a config written in seconds made a rejected
                            # minion send 60 hellos a second); other refusals: the backoff alone
                            wait = option(self.opts, "acceptance_wait_time", float)
                            self.reauth_delay = max(self.backoff.delay(), random.uniform(wait, 1.5 * wait))
                        continue
                    except MasterBusy as exc:
                        # the master admits hellos at the rate its workers sustain: come back within
                        # the window it announced (a few times; then the backoff paces us)
                        busy_streak += 1
                        self.refusals.warning("session:busy", "%s%s", self.prefix, exc)
                        if exc.retry_s:
                            # the window it expects to admit the minions it turned away in: coming
                            # back at a random time within it, they arrive as fast as it admits them
                            self.reauth_delay = random.uniform(0, max(self.spread_s, exc.retry_s))
                        elif busy_streak <= 3:
                            self.reauth_delay = random.uniform(0, max(self.spread_s, self.backoff.initial))
                        else:
                            self.backoff.failed()
                        continue
                    except SessionError as exc:
                        if not stop.is_set():  # rate-limited: whoever answers our hellos must not flood the log
                            self.refusals.warning(f"session:{str(exc)[:160]}", "%ssession could not start: %s",
                                                  self.prefix, exc)
                        self.backoff.failed()
                        if isinstance(exc, MasterUnreachable):
                            self.masters.unreachable()
                        continue
                else:
                    session, ready = ready, None
                busy_streak = 0
                watch.answered(session.result.master_now_ms)
                self.clock_offset_ms = session.result.clock_offset_ms
                self.sessions_registered += 1
                began = time.monotonic()
                restarted = False
                try:
                    await self.run_session(session, stop, watch)
                except FailBack as exc:
                    ready = exc.session
                    log.warning("%s%s", self.prefix, exc)
                    self.masters.back_to_top()
                except MasterRestarted as exc:
                    restarted = True
                    self.spread_s = exc.spread_s
                    self.reauth_delay = random.uniform(0, exc.spread_s)
                    log.info("%s%s; re-authenticating in %.2f s", self.prefix, exc, self.reauth_delay)
                except SessionError as exc:
                    if not stop.is_set():
                        self.refusals.warning(f"closed:{str(exc)[:160]}", "%ssession closed: %s", self.prefix, exc)
                    if isinstance(exc, MasterUnreachable):
                        self.masters.unreachable()
                except Exception:  # noqa: BLE001 - nothing a peer sends may stop the minion
                    log.exception("%ssession failed", self.prefix)
                finally:
                    self.session = None
                    if self.registered is not None:
                        self.registered.clear()
                    session.close()
                    # Only a session that lasted resets the backoff: one that dies at once (a forged
                    # reply on the path, a master refusing every request) must not turn every minion
                    # into a tight re-authentication loop against the master.
                    if time.monotonic() - began >= max(2.0, 3 * session.heartbeat):
                        self.backoff.reset()
                if restarted:
                    self.backoff.reset()
                elif not stop.is_set() and ready is None:
                    self.backoff.failed()
        finally:
            if watch is not None:
                watch.close()
            if link is not None:
                link.close()
            if ready is not None:
                ready.close()

    async def pause(self, watch: MasterWatch, stop: asyncio.Event) -> bool:
        """Wait before the next hello: the delay drawn after a restart announcement, or else the
        reconnect backoff.  Meanwhile publications are dropped (there is no session to run them
        in), and a master announcing a new boot cuts a backoff short to a random delay within the
        window it announced.  True when the minion is stopping."""
        if self.reauth_delay is not None:
            delay, self.reauth_delay = self.reauth_delay, None
        else:
            delay = self.backoff.delay()
            if delay:
                log.info("%sreconnecting in %.2f s (backoff %.2f s, recon_max %.1f s)", self.prefix, delay,
                         self.backoff.value, self.backoff.maximum)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                receiving = asyncio.ensure_future(watch.recv())
                done, _ = await asyncio.wait({stopping, receiving}, timeout=remaining,
                                             return_when=asyncio.FIRST_COMPLETED)
                if receiving not in done:
                    receiving.cancel()
                    continue
                message = receiving.result()
                if message is None or not watch.is_announcement(message[0]):
                    continue
                announcement = watch.restarted(message[1], self.trust.known, self.clock_offset_ms)
                if announcement is None:
                    continue
                self.spread_s = announcement.spread_s()
                sooner = random.uniform(0, self.spread_s)
                if loop.time() + sooner < deadline:
                    log.info("%sthe master at %s started (boot %s); re-authenticating in %.2f s", self.prefix,
                             watch.address, announcement.boot.hex()[:8], sooner)
                    deadline = loop.time() + sooner
                    self.backoff.reset()
            return True
        finally:
            stopping.cancel()

    # -- the mine -----------------------------------------------------------------------
    async def mine_loop(self, stop: asyncio.Event) -> None:
        """Salt's ``__mine_interval`` schedule: mine.update once the minion has registered (and has
        its pillar, which may hold mine_functions), then every ``mine_interval`` minutes, whatever
        happens to sessions in between.  A failed update is logged; the next one runs on time."""
        if not option(self.opts, "mine_enabled", bool):
            return
        interval = option(self.opts, "mine_interval", float) * 60
        loop = asyncio.get_running_loop()
        assert self.registered is not None   # made by run() before this task starts
        while not stop.is_set():
            # woken when a session registers, not every 0.2 s (10,000 swarm minions polling while
            # they waited for their first session woke the swarm 50,000 times a second)
            while not self.started or self.session is None:
                if await _set_or_stopped(self.registered, stop):
                    return
            await loop.run_in_executor(self.executor, self.mine_update)
            if interval <= 0 or await _stopped_within(stop, interval):
                return

    def mine_update(self) -> None:
        from runtime import modules

        try:
            stored = modules.call(self.module_env(None), "mine.update")
        except Exception as exc:  # noqa: BLE001 - the mine must never stop the minion
            log.warning("%smine.update failed: %s", self.prefix, exc)
            return
        if stored is not None:
            log.info("%smine updated", self.prefix)

    async def run_session(self, session: Session, stop: asyncio.Event, watch: MasterWatch) -> None:
        grant = session.grant
        pkey = PublishKey(grant.publish_epoch, grant.publish_key, 0)
        began = session.result.master_now_ms  # older publications can only be replays here
        if self.receiver is None:
            self.receiver = PublicationReceiver(session.result.master_pub, pkey,
                                                clock_offset_ms=session.result.clock_offset_ms, not_before_ms=began)
        else:
            self.receiver.adopt(pkey, not_before_ms=began)
            self.receiver.clock_offset_ms = session.result.clock_offset_ms
        self.session = session
        try:
            await self.on_registered(session)
        except transport.RequestTimeout as silent:   # a master too busy to answer: a session problem, not a bug
            raise SessionError(f"the master did not answer the session's first requests ({silent})") from None
        except RemoteRefusal as refused:
            if refused.reason not in BUSY_REASONS:
                raise
            raise SessionError(f"the master refused the session's first requests as busy ({refused})") from None
        probe = asyncio.Event()
        link = watch if self.masters.failover else None     # its connection state is watched with failover only
        tasks = [asyncio.create_task(self.heartbeat_loop(session, probe, link), name="heartbeat"),
                 asyncio.create_task(self.subscribe_loop(session, watch), name="subscribe"),
                 asyncio.create_task(self.listen_loop(session), name="listen"),
                 asyncio.create_task(stop.wait(), name="stop")]
        if self.masters.failover:
            tasks.append(asyncio.create_task(self.connection_loop(watch, probe), name="connection"))
        if self.masters.failback_due():
            tasks.append(asyncio.create_task(self.failback_loop(session, stop), name="failback"))
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        # several tasks may end at once (a restarted master refuses a heartbeat as its announcement
        # arrives): read every exception, and act on the most telling one
        failures = [(task.get_name(), task.exception()) for task in done if task.get_name() != "stop"]
        failures = [(name, exc) for name, exc in failures if exc is not None]
        for kind in (FailBack, MasterRestarted, MasterUnreachable):
            for _, exc in failures:
                if isinstance(exc, kind):
                    raise exc
        if failures:
            name, exc = failures[0]
            raise SessionError(f"{name} failed: {exc}") from exc

    async def failback_loop(self, session: Session, stop: asyncio.Event) -> None:
        """With ``master_failback``: try the first master every master_failback_interval; once it
        accepts a hello, end this session and move back to it (``FailBack``)."""
        top = self.masters.top
        interval = self.masters.failback_interval(self.opts, session.heartbeat)
        while True:
            await asyncio.sleep(interval)
            try:
                probe = await authenticate(top.ret_address, self.identity, self.id, self.trust, self.opts, stop,
                                           self.ctx, self.prefix)
            except SessionError as exc:
                log.debug("%sfirst master %s not back yet: %s", self.prefix, top, exc)
                continue
            raise FailBack(f"the first master {top} answers again: moving back to it", probe)

    async def on_registered(self, session: Session) -> None:
        """Send grains (and fetch pillar), fire minion_start once, flush undelivered returns."""
        if option(self.opts, "file_client", str) == "local":
            await session.request(protocol.GrainsUpload(grains=self.grains))
            if not self.started:
                self.pillar = await asyncio.get_running_loop().run_in_executor(self.executor, self.local_pillar)
        elif self.started and self.pillar:
            # a rebuilt session: the in-memory pillar stays (refreshed only on request, as Salt),
            # the master just needs our grains again; no pillar compile storm after a master restart
            await session.request(protocol.GrainsUpload(grains=self.grains))
        else:
            reply = await session.request(self.pillar_request())
            self.replace_pillar(reply.pillar)
        self.started = True
        if self.registered is not None:
            self.registered.set()
        if not self.start_fired:
            # fired once, but only once the master took it: a busy master that let the request time
            # out gets it from the next session (watchers of salt/minion/<id>/start wait for it)
            await session.request(protocol.MinionEvents(events=(
                protocol.MinionEvent(tag="minion_start", data={
                    "cmd": "_minion_event", "pretag": None, "data": f"Minion {self.id} started at {time.ctime()}"}),
                protocol.MinionEvent(tag=f"salt/minion/{self.id}/start",
                                     data={"data": f"Minion {self.id} started"}))))
            self.start_fired = True
        await self.flush_pending(session)

    async def flush_pending(self, session: Session) -> None:
        """Send the returns kept from earlier (oldest first): at a new session, and after each
        return delivered.  One the master has already, or cannot decode, is dropped (resending it
        would fail every time); one refused for now (busy, its store unreachable) stops the flush
        and stays kept, for the next return delivered or the next session."""
        if self.flushing:
            return
        self.flushing = True
        try:
            while self.pending_returns:
                load = self.pending_returns[0]
                try:
                    await session.request(load)
                except RemoteRefusal as exc:
                    if exc.reason not in DROPPED_RETURN_REFUSALS:
                        self.refusals.warning("return:kept", "%skept return for %s refused (%s): kept for later",
                                              self.prefix, load.jid, exc.reason)
                        return
                    log.warning("%sundelivered return for %s dropped: %s", self.prefix, load.jid, exc)
                self.pending_returns.popleft()
        finally:
            self.flushing = False

    def pillar_request(self, clean_cache: bool = False) -> protocol.PillarRequest:
        """What the minion asks the master for its pillar: its grains and environments."""
        return protocol.PillarRequest(grains=self.grains, saltenv=self.opts.get("saltenv"),
                                      pillarenv=self.opts.get("pillarenv"), clean_cache=clean_cache)

    def replace_pillar(self, data: dict[str, Any]) -> None:
        self.pillar.clear()
        self.pillar.update(data)

    # -- the three concurrent tasks -------------------------------------------------------
    async def heartbeat_loop(self, session: Session, probe: asyncio.Event | None = None,
                             link: MasterWatch | None = None) -> None:
        """A heartbeat every heartbeat period, or at once when ``probe`` is set (the connection to
        the master dropped); no reply within master_alive_interval: ``MasterUnreachable``.

        With ``link`` (the failover list's watch of the master's publish connection): while that
        connection is up the master's process is there, only slow (its request queue full of a
        fleet's pillar compiles, say), so unanswered heartbeats end the session only after
        ``SLOW_MASTER_FACTOR`` x master_alive_interval.  Leaving a busy master at once sent its
        minions to re-authenticate with the next one, as busy, and back: 1,000 minions on three
        masters re-authenticated ~1,500 times in one pillar refresh, and the jobs published
        meanwhile never reached the minions between sessions (bench/cluster.py)."""
        alive = option(self.opts, "master_alive_interval", float) or 3 * session.heartbeat
        # With the link watched, one request waits all of master_alive_interval: a busy master
        # answers late (its queue seconds long), and a second try would discard that reply and
        # queue one more heartbeat.  Without it, two tries of half of it (a lost request retried).
        timeout, tries = (alive, 1) if link is not None else (max(0.2, alive / 2), 2)
        probe = probe or asyncio.Event()
        answered = time.monotonic()
        wait = session.heartbeat
        while True:
            if not probe.is_set():
                try:
                    await asyncio.wait_for(probe.wait(), wait)
                except TimeoutError:
                    pass
            probe.clear()
            assert self.receiver is not None   # made by run_session before this task starts
            try:
                reply = await session.request(protocol.Heartbeat(epoch=self.receiver.epoch),
                                              timeout=timeout, tries=tries)
            except transport.RequestTimeout as exc:
                silent = time.monotonic() - answered
                if link is None or not link.link_up:
                    raise MasterUnreachable(f"the master missed heartbeats for {alive:.1f} s ({exc})") from None
                if silent >= SLOW_MASTER_FACTOR * alive:
                    raise MasterUnreachable(f"the master answered no heartbeat for {silent:.1f} s, its publish "
                                            f"connection up ({exc})") from None
                self.refusals.warning("heartbeat:slow", "%sno heartbeat reply for %.1f s, the master's publish "
                                      "connection up: it is slow, not gone; keeping the session (up to %.1f s)",
                                      self.prefix, silent, SLOW_MASTER_FACTOR * alive)
                wait = 0.0
                continue
            except RemoteRefusal as exc:
                if exc.reason not in BUSY_REASONS:
                    raise SessionError(f"heartbeat refused: {exc}") from None
                # the master's queue is full for now: the session stands; one more try soon, and a
                # master that stays busy for master_alive_interval (SLOW_MASTER_FACTOR times that
                # with its publish connection up, as a silent one) counts as one that does not answer
                # (the refusal is unauthenticated: a forged one can do no more than a lost reply)
                limit = alive * (SLOW_MASTER_FACTOR if link is not None and link.link_up else 1)
                if time.monotonic() - answered > limit:
                    raise MasterUnreachable(f"the master refused heartbeats as busy for {limit:.1f} s") from None
                self.refusals.warning("heartbeat:busy", "%sheartbeat refused (%s): trying again", self.prefix, exc.reason)
                wait = min(session.heartbeat, max(0.2, alive / 4)) * (0.5 + random.random())
                continue
            answered = time.monotonic()
            session.adopt_period(reply.heartbeat)
            wait = session.heartbeat
            if reply.publish_key is not None:
                self.receiver.update_key(PublishKey(reply.epoch, reply.publish_key, 0))

    async def connection_loop(self, watch: MasterWatch, probe: asyncio.Event) -> None:
        """With a failover list: when the connection to the master's publish port drops (its process
        died, or the path to it), the heartbeat checks the master now rather than at its next period,
        so a dead master is found within master_alive_interval of its death (docs/failover.md)."""
        while True:
            await watch.disconnected()
            log.info("%sthe connection to the master at %s dropped; checking the master now", self.prefix,
                     watch.address)
            probe.set()

    async def subscribe_loop(self, session: Session, watch: MasterWatch) -> None:
        while True:
            message = await watch.recv()
            if message is None:
                continue
            topic, body = message
            if watch.is_announcement(topic):
                announcement = watch.restarted(body, session.result.master_pub, session.result.clock_offset_ms)
                if announcement is not None:
                    raise MasterRestarted(f"the master at {watch.address} restarted (boot "
                                          f"{announcement.boot.hex()[:8]}, {announcement.fleet} minions at "
                                          f"{announcement.rate:.0f} hellos/s)", announcement.spread_s())
                continue
            await self.handle_publication(session, body)

    async def listen_loop(self, session: Session) -> None:
        assert self.events is not None
        while True:
            event = await self.events.get()
            try:
                if event.tag == "pillar_refresh":
                    await self.refresh_pillar_now(session, bool(event.data.get("clean_cache")))
                elif event.tag == "grains_refresh":
                    from runtime import grains as grains_mod

                    self.grains = grains_mod.minion_grains(self.opts, self.id)
                    await session.request(protocol.GrainsUpload(grains=self.grains))
            except (RemoteRefusal, transport.RequestTimeout, ConfigError) as exc:
                # As Salt: a failed refresh (or a grains file broken since) keeps the data in memory
                # and the session up.
                log.error("%s%s failed, keeping the data in memory: %s", self.prefix, event.tag, exc)
            finally:
                if event.done is not None:
                    event.done.set()

    async def refresh_pillar_now(self, session: Session, clean_cache: bool = False) -> None:
        if option(self.opts, "file_client", str) == "local":
            data = await asyncio.get_running_loop().run_in_executor(self.executor, self.local_pillar)
        else:
            data = (await session.request(self.pillar_request(clean_cache))).pillar
        self.replace_pillar(data)
        log.info("%spillar refreshed (%d keys)", self.prefix, len(data))

    # -- jobs -------------------------------------------------------------------------
    async def handle_publication(self, session: Session, body: bytes) -> None:
        assert self.receiver is not None
        try:
            try:
                publication = self.receiver.open(body)
            except NeedPublishKey:
                reply = await session.request(protocol.PublishKeyRequest())
                self.receiver.update_key(PublishKey(reply.epoch, reply.publish_key, 0))
                publication = self.receiver.open(body)
        except (PublicationRefused, codec.DecodeError, CryptoError) as exc:
            self.refusals.warning(f"pub:{getattr(exc, 'reason', 'x')}", "%sdropped a publication: %s", self.prefix,
                                  exc)
            return
        job = publication.payload
        if not isinstance(job, dict) or not isinstance(job.get("jid"), str) or not isinstance(job.get("fun"), str):
            self.refusals.warning("pub:shape", "%sdropped a malformed job", self.prefix)
            return
        if not self.targeted(job):
            return
        if not self.jobs.first_time(job["jid"]):
            self.refusals.warning("pub:dup", "%sdropped a duplicate of job %s", self.prefix, job["jid"])
            return
        asyncio.get_running_loop().create_task(self.run_job(job))

    def targeted(self, job: dict[str, Any]) -> bool:
        allowed = job.get("acl_minions")
        if allowed is not None and (not isinstance(allowed, list) or self.id not in allowed):
            # published by a publisher_acl user for other minions only: whatever this minion's own
            # view of the target, the master did not check the ACL for it
            self.refusals.warning("pub:acl", "%sjob %s of user %s is not for this minion (publisher_acl)",
                                  self.prefix, job.get("jid"), job.get("user"))
            return False
        minion = match.Minion(self.id, self.grains, self.pillar)
        try:
            return match.match_one(str(job.get("tgt_type", "glob")), job.get("tgt", ""), minion,
                                   option(self.opts, "nodegroups", dict))
        except match.MatchError as exc:
            self.refusals.warning("pub:target", "%sjob %s has a malformed target: %s", self.prefix, job.get("jid"),
                                  exc)
            return False

    async def run_job(self, job: dict[str, Any]) -> None:
        jid, fun = job["jid"], job["fun"]
        log.info("%suser %s executing %s with jid %s", self.prefix, job.get("user", ""), fun, jid)
        # argument values may hold secrets (cmd.run with a password): never logged
        log.debug("%sjob %s: %d arguments, keyword arguments %s, target %r (%s)", self.prefix, jid,
                  len(job.get("arg") or []), sorted(job.get("kwarg") or {}), job.get("tgt"),
                  job.get("tgt_type", "glob"))
        self.jobs.add(RunningJob(jid, fun, list(job.get("arg") or []), job.get("tgt"),
                                 str(job.get("tgt_type", "glob")), str(job.get("user", ""))))
        loop = asyncio.get_running_loop()
        try:
            if self.runs_on_loop(fun):
                ret, retcode, success = self.execute(job)
            elif option(self.opts, "multiprocessing", bool):
                ret, retcode, success = await loop.run_in_executor(self.executor, self.execute_in_process, job)
            else:
                ret, retcode, success = await loop.run_in_executor(self.executor, self.execute, job)
        finally:
            self.jobs.done(jid)
        await self.send_return(protocol.JobReturn(jid=jid, fun=fun, fun_args=list(job.get("arg") or []), ret=ret,
                                                  retcode=retcode, success=success,
                                                  out="highstate" if fun in STATE_FUNCTIONS else None))

    async def send_return(self, load: protocol.JobReturn) -> None:
        """Deliver a job's return through the current session.  One that cannot be delivered
        (no session, the master silent, the session closed under it as the master died) is kept
        and sent by the next session (``on_registered``); when a new session is up already
        (failover to another master while the return waited), it is sent through that one now."""
        last: Session | None = None
        while (session := self.session) is not None and session is not last:
            last = session
            try:
                await session.request(load)
                log.debug("%sreturned job %s (retcode %s)", self.prefix, load.jid, load.retcode)
                if self.pending_returns:   # the master takes returns again: the kept ones too
                    try:
                        await self.flush_pending(session)
                    except (transport.RequestTimeout, SessionError) as exc:
                        log.info("%skept returns not sent yet (%s)", self.prefix, exc)
                return
            except RemoteRefusal as exc:
                if exc.reason in DROPPED_RETURN_REFUSALS:
                    log.warning("%sreturn for %s refused: %s", self.prefix, load.jid, exc)
                    return
                if exc.reason in BUSY_REASONS:
                    # the master's queue is full for now: send it again through this session after
                    # return_retry_timer..return_retry_timer_max; a master that stays busy loses the
                    # session to the heartbeat, and the return goes to the next one
                    self.refusals.warning("return:busy", "%sreturn for %s refused (%s): sending it again",
                                          self.prefix, load.jid, exc.reason)
                    await asyncio.sleep(self.return_retry_wait())
                    last = None if self.session is session else session
                    continue
                log.warning("%sreturn for %s refused (%s); kept, to be sent again", self.prefix, load.jid, exc)
            except (transport.RequestTimeout, SessionError) as exc:
                log.warning("%sreturn for %s not delivered yet (%s); will resend", self.prefix, load.jid, exc)
        self.pending_returns.append(load)

    def runs_on_loop(self, fun: str) -> bool:
        """A function that returns at once (``test_mod.INSTANT``: test.ping ...) runs on the event
        loop, with multiprocessing too (its return is the same, without a thread hand-off or a
        fork); not while a custom module is synced, which could shadow it with code that blocks."""
        from runtime.modules import custom, test_mod

        return fun in test_mod.INSTANT and not custom.has_modules(self.opts)

    def return_retry_wait(self) -> float:
        low = max(0.0, option(self.opts, "return_retry_timer", float))
        high = max(low, option(self.opts, "return_retry_timer_max", float))
        return random.uniform(low, high)

    def execute(self, job: dict[str, Any]) -> tuple[Any, int, bool]:
        from runtime import modules

        env = self.module_env(job.get("jid"))
        try:
            ret = modules.call(env, job["fun"], list(job.get("arg") or []), dict(job.get("kwarg") or {}))
        except modules.CommandError as exc:
            return f"ERROR: {exc}", 1, False
        except Exception as exc:  # noqa: BLE001 - a failing function is a return, not a crash
            log.debug("job %s failed", job.get("jid"), exc_info=True)
            return f"The minion function caused an exception: {type(exc).__name__}: {exc}\n" \
                   f"{traceback.format_exc(limit=5)}", 1, False
        if job["fun"] in STATE_FUNCTIONS:  # Salt's state retcodes: 1 compile errors, 2 a failed state
            retcode = state_retcode(ret)
        else:
            retcode = env.retcode if isinstance(env.retcode, int) and not isinstance(env.retcode, bool) else 0
        return _plain(ret), retcode, True

    def execute_in_process(self, job: dict[str, Any]) -> tuple[Any, int, bool]:
        from runtime.minion import procjob

        return procjob.run_forked(self, job)

    # -- what job functions see ------------------------------------------------------------
    def call_master(self, message: protocol.SessionRequest[R], timeout: float | None = None) -> R:
        """From a job thread: one sealed request through the current session."""
        if self.loop is None or self.session is None:
            from runtime.modules import CommandError

            raise CommandError("not connected to the master")
        session = self.session
        future = asyncio.run_coroutine_threadsafe(session.request(message), self.loop)
        return future.result(timeout or 60)

    def fire_local(self, tag: str, data: dict[str, Any], wait: float | None = None) -> bool:
        if self.loop is None or self.events is None:
            return False
        done = threading.Event() if wait else None
        self.loop.call_soon_threadsafe(self.events.put_nowait, LocalEvent(tag, data, done))
        return done.wait(wait) if done is not None else True

    def request_pillar_refresh(self, wait: bool = True, timeout: float | None = None,
                               clean_cache: bool = True) -> bool:
        """Fire pillar_refresh on the local bus; with wait, return once the new pillar is in memory."""
        limit = float(timeout or option(self.opts, "refresh_timeout", float)) if wait else None
        return self.fire_local("pillar_refresh", {"clean_cache": bool(clean_cache)}, wait=limit)

    def local_pillar(self) -> dict[str, Any]:
        from runtime import pipeline

        if self._local_pillar_compiler is None:
            from runtime.modules import ModuleEnv, live_functions

            # masterless: pillar templates call execution functions for real on this minion, as in Salt
            env = ModuleEnv(opts=self.opts, grains=self.grains, pillar={}, state_source=self.state_source())
            self._local_pillar_compiler = pipeline.pillar_compiler(self.opts, functions=live_functions(env))
        return self._local_pillar_compiler.compile(self.id, self.grains).pillar

    def fresh_pillar(self) -> tuple[dict[str, Any], list]:
        if option(self.opts, "file_client", str) == "local":
            return self.local_pillar(), []
        return dict(self.call_master(self.pillar_request()).pillar), []

    def state_source(self) -> FileSource:
        if option(self.opts, "file_client", str) == "local":
            from compiler.roots import LocalRoots

            return LocalRoots(option(self.opts, "file_roots", dict))
        from runtime.minion.remote import RemoteFiles

        if self._remote_files is None:
            # looked up at each call: a job process (procjob) replaces call_master by its pipe to the parent
            self._remote_files = RemoteFiles(lambda message: self.call_master(message), self.opts["cachedir"])
        self._remote_files.new_run()
        return self._remote_files

    def module_env(self, jid: str | None) -> ModuleEnv:
        from runtime.modules import ModuleEnv

        return ModuleEnv(
            opts=self.opts, grains=self.grains, pillar=self.pillar, fresh_pillar=self.fresh_pillar,
            refresh_pillar=self.request_pillar_refresh,
            refresh_grains=lambda: self.fire_local("grains_refresh", {},
                                                   wait=option(self.opts, "refresh_timeout", float)),
            state_source=self.state_source(), fire_event=lambda tag, data: self.fire_local(tag, dict(data)),
            # looked up at each call: a job process (procjob) replaces call_master by its pipe to the parent
            master=lambda message: self.call_master(message), jid=jid, jobs=self.jobs)


async def _set_or_stopped(event: asyncio.Event, stop: asyncio.Event) -> bool:
    """Wait until ``event`` or ``stop`` is set; True when ``stop`` is."""
    if not event.is_set() and not stop.is_set():
        waits = {asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())}
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
    return stop.is_set()


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


def _plain(value: Any) -> Any:
    """Make a return msgpack-safe (sets, tuples, objects)."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, int)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool, bytes)) or value is None:
        return value
    return str(value)


def _run_loop(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``asyncio.run(main())``, under cProfile with ``SALTPAN_PROFILE_DIR`` set (runtime.profiling)."""
    from runtime.profiling import run_profiled

    run_profiled("minion", asyncio.run, main())


def run(opts: dict[str, Any]) -> int:
    """Run one minion until SIGTERM/SIGINT; 0 after a clean stop, 2 when it cannot start."""
    import signal

    from runtime import pidfile, sdnotify
    from runtime.log_setup import LogFileError, cannot_start, setup_daemon
    from runtime.private_files import ensure_private_dir

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())  # until the event loop takes over
    try:
        setup_daemon(opts)
        for key in ("pki_dir", "cachedir"):
            ensure_private_dir(opts[key])
        pidfile.claim(opts.get("pidfile"), "minion")
    except (LogFileError, pidfile.PidFileError, OSError) as exc:
        return cannot_start("minion", exc, log)
    try:
        minion = Minion(opts)
    except (OSError, CryptoError, ConfigError) as exc:   # ConfigError: a grains file that cannot be used
        pidfile.release(opts.get("pidfile"))
        return cannot_start("minion", exc, log)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if stopping.is_set():
            stop.set()
        log.info("minion %s starting (master %s)", minion.id, minion.ret_address())
        sdnotify.notify(f"READY=1\nSTATUS=minion {minion.id}, master {minion.ret_address()}")
        await minion.run(stop)

    try:
        _run_loop(main)
    finally:
        sdnotify.notify("STOPPING=1")
        pidfile.release(opts.get("pidfile"))
        abandoned = minion.abandoned
        if abandoned:
            log.warning("minion %s stopped; abandoned %d running job(s): %s", minion.id, len(abandoned),
                        ", ".join(f"{j['fun']} {j['jid']}" for j in abandoned))
        else:
            log.info("minion %s stopped", minion.id)
    if abandoned:
        # jobs running in threads would hold the exit until they end, and their returns could
        # not be sent any more: stop now, as salt-minion does (job processes run on by themselves)
        logging.shutdown()
        os._exit(0)
    return 0
