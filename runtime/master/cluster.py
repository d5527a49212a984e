"""The ``ClusterRelay`` process of a master sharing its store (``master_store: postgres``): what
one master does must reach the minions and listeners of every other.

Through the database, no master-to-master socket (docs/protocol.md, "Masters in one cluster"):

* **publications** — the master a job is published on records it (``publish`` change, with the
  job's payload and target list); every other master's relay seals it with its own publish key,
  signs it with the (cluster) key and hands it to its Publisher, so each minion gets the job from
  the master it is connected to.  Returns go to the shared job cache from whichever master the
  minion answers, so ``saltpan jobs lookup`` on any master shows all of them.
* **revocations** — a ``revoke`` change (a key deleted, rejected or replaced on any master, or by
  ``saltpan key`` on any host) drops this master's sessions of those ids and starts a new publish
  epoch; a ``key`` change that takes an accepted key away does the same, in case no master
  recorded the revocation.
* **events** — every event fired on this master (the EventPublisher hands them to the relay,
  but the local ``salt/presence/present`` of each master) is copied to the shared event log, and
  every other master's events someone listens to here are fired on this bus, frame for frame:
  ``saltpan event listen`` and a waiting ``saltpan run`` on any master see the returns and
  ``salt/auth`` / ``salt/key`` events of all, and a master nobody listens on fires none.

PostgreSQL ``LISTEN`` wakes the relay at each change, and it reads the log the notification names
(the changes, or the shared events; a notification of events carries them when they fit in it,
and those are fired without a read); it also reads both every second for what it may have missed,
and after an outage from where it stopped.  While the database is unreachable the relay
keeps the events of its bus in memory (up to ``MAX_BUFFERED``, the oldest dropped beyond it, with
a warning) and sends them when it is back; publications older than ``PUBLISH_MAX_AGE_S`` are not
sent late (their clients stopped waiting).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Collection
from typing import Any

import zmq

from runtime import transport
from runtime.config import option
from runtime.crypt.identity import Identity
from runtime.crypt.publish import seal_publication
from runtime.events import EVENT_PULL, PROBE_PREFIX
from runtime.master.changes import BOTH_LOGS, CHANGES, EVENTS, Change, ChangeLog, SharedEvent
from runtime.master.event_publisher import EVENT_RELAY, RELAYED, SUBSCRIPTIONS, listened, unpack_topics
from runtime.master.revocation import loses_identity
from runtime.master.sessions import SessionStore
from runtime.master.store.errors import StoreError, StoreUnavailable
from runtime.master.store.factory import master_id, open_master_stores
from runtime.ratelog import RateLimitedLog

log = logging.getLogger("saltpan.master.cluster")

MAX_BUFFERED = 10_000           # events kept while the database is away
PUBLISH_MAX_AGE_S = 60.0        # a publication older than this is not sent late
EVENTS_KEEP_S = 600.0           # shared events are pruned after this
GAP_WAIT_S = 10.0               # a sequence number not committed after this never will be
READ_LIMIT = 5000               # rows read per pass
LOCAL_ONLY_TAGS = ("salt/presence/present",)    # each master's own view, fired by each
FULL_READ_S = 1.0               # both logs read at least this often, whatever the notifications named
FLUSH_GAP_S = 0.05              # events fired this soon after a copy wait to go with the next one


def shared_tag(tag: str) -> bool:
    """Whether an event of this master's bus goes to the other masters."""
    return not tag.startswith(PROBE_PREFIX) and tag not in LOCAL_ONLY_TAGS


class SeqCursor:
    """Where a reader of a log numbered by a sequence stands, without skipping a row that commits
    after a higher-numbered one (two masters inserting at once: seq 7 may commit after seq 8).

    ``low``: every row up to it was handled; rows above it that were handled are remembered, so a
    read from ``low`` hands each row out once.  A gap (a number not seen yet) holds ``low`` for up
    to ``GAP_WAIT_S`` — rows above it are still handed out at once — then is given up (a rolled
    back insert leaves a number that never commits)."""

    def __init__(self, low: int):
        self.low = low
        self.handled: set[int] = set()
        self.gap_since: float | None = None

    def take(self, seq: int) -> bool:
        """True the first time ``seq`` is read."""
        if seq <= self.low or seq in self.handled:
            return False
        self.handled.add(seq)
        return True

    def advance(self, now: float) -> None:
        while self.low + 1 in self.handled:
            self.low += 1
            self.handled.discard(self.low)
        if not self.handled:
            self.gap_since = None
            return
        if self.gap_since is None:
            self.gap_since = now
        elif now - self.gap_since >= GAP_WAIT_S:
            self.low = min(self.handled) - 1
            self.gap_since = None
            self.advance(now)


class Relay:
    """The relay's work, one step at a time (the process loop is :func:`run`)."""

    def __init__(self, opts: dict[str, Any], identity: Identity, changes: ChangeLog, sessions: SessionStore,
                 publish_sock: zmq.Socket, bus_sock: zmq.Socket):
        self.opts = opts
        self.me = master_id(opts)
        self.identity = identity
        self.changes = changes
        self.sessions = sessions
        self.publish_sock = publish_sock
        self.bus_sock = bus_sock
        # the topics this master's bus has subscribers for (None until the EventPublisher tells)
        self.topics: frozenset[bytes] | None = None
        self.outbox: deque[tuple[str, bytes]] = deque()
        self.outbox_lock = threading.Lock()
        self.pending = threading.Event()    # set while the outbox holds events
        self.dropped = 0
        self.changes_cursor = SeqCursor(changes.latest())
        self.events_cursor = SeqCursor(changes.latest_event())

    # ------------------------------------------------------------ from the other masters
    def catch_up(self, logs: Collection[str] = BOTH_LOGS) -> int:
        """Act on the changes and fire the events recorded since the last call (of the ``logs``
        named: a NOTIFY names its log, and a relay woken for events need not read the changes);
        how many."""
        now = time.monotonic()
        done = 0
        if CHANGES in logs:
            for change in self.changes.since(self.changes_cursor.low, READ_LIMIT):
                if self.changes_cursor.take(change.seq):
                    if change.master_id != self.me:
                        self.apply(change)
                    done += 1
            self.changes_cursor.advance(now)
        if EVENTS in logs:
            done += self.take_events(self.changes.events_since(self.events_cursor.low, READ_LIMIT))
        return done

    def take_events(self, events: Collection[SharedEvent]) -> int:
        """Fire the other masters' events among ``events`` (read from the log, or carried by a
        notification), each seq once; how many were new."""
        done = 0
        for event in events:
            if self.events_cursor.take(event.seq):
                if event.master_id != self.me:
                    self.fire(event)
                done += 1
        self.events_cursor.advance(time.monotonic())
        return done

    def apply(self, change: Change) -> None:
        if change.topic == "revoke":
            for minion_id in change.data.get("ids", []):
                self.sessions.revoke_here(str(minion_id), f"{change.data.get('reason', 'revoked')} on {change.master_id}")
                log.info("sessions of %s dropped: %s on master %s", minion_id, change.data.get("reason"),
                         change.master_id)
        elif change.topic == "key":
            gone = loses_identity(str(change.data.get("action")), change.data.get("changed") or {})
            for minion_id in gone:
                if self.sessions.minion_sessions(minion_id):
                    self.sessions.revoke_here(minion_id, f"key {change.data.get('action')} on {change.master_id}")
        elif change.topic == "publish":
            if time.time() - change.at > PUBLISH_MAX_AGE_S:
                log.warning("publication of job %s from master %s is %.0f s old: not sent late",
                            change.data.get("payload", {}).get("jid"), change.master_id, time.time() - change.at)
                return
            self.publish(change.data.get("payload") or {}, change.data.get("only"))

    def publish(self, payload: dict[str, Any], only: list[str] | None) -> None:
        pkey, serial = self.sessions.next_publication()
        body = seal_publication(self.identity, pkey, serial, payload)
        topics = [transport.minion_topic(m) for m in only] if only else [transport.BROADCAST]
        for topic in topics:
            self.publish_sock.send_multipart([topic, body])
        log.debug("relayed job %s to this master's minions", payload.get("jid"))

    def fire(self, event: SharedEvent) -> bool:
        """Fire another master's event on this bus, if someone here listens to its tag (marked
        RELAYED: the EventPublisher does not hand it back); whether it was fired."""
        tag = event.tag.encode()
        if not listened(self.topics, tag):
            return False
        try:
            self.bus_sock.send_multipart([tag, event.data, RELAYED], zmq.NOBLOCK)
        except zmq.Again:
            return False
        return True

    # ------------------------------------------------------------ to the other masters
    def observe(self, tag: bytes, data: bytes) -> None:
        """An event fired on this master (the EventPublisher hands the relay those only)."""
        text = tag.decode("utf-8", "replace")
        if not shared_tag(text):
            return
        with self.outbox_lock:
            self.outbox.append((text, data))
            while len(self.outbox) > MAX_BUFFERED:
                self.outbox.popleft()
                self.dropped += 1
            self.pending.set()

    def flush(self) -> int:
        """Copy the buffered events to the shared log (kept for the next call when the database
        is away); how many."""
        with self.outbox_lock:
            batch = list(self.outbox)[:500]
            dropped, self.dropped = self.dropped, 0
        if dropped:
            log.warning("%d event(s) of this master's bus were not shared: more than %d waited for the database",
                        dropped, MAX_BUFFERED)
        if not batch:
            return 0
        try:
            self.changes.record_events(self.me, batch)
        except StoreUnavailable:
            raise                     # kept for the next call
        except StoreError:
            # refused for what they hold, not for the database's absence: sent again they would be
            # refused again and hold back every later event of this bus; each on its own, and
            # only the refused ones dropped
            self._record_one_by_one(batch)
        with self.outbox_lock:
            for _ in batch:
                if self.outbox:
                    self.outbox.popleft()
            if not self.outbox:
                self.pending.clear()
        return len(batch)


    def _record_one_by_one(self, batch: list[tuple[str, bytes]]) -> None:
        for event in batch:
            try:
                self.changes.record_events(self.me, [event])
            except StoreUnavailable:
                raise
            except StoreError as exc:
                log.warning("event %s of this master's bus not shared: the database refused it (%s)", event[0][:200],
                            exc.message)


def _bus_reader(relay: Relay, opts: dict[str, Any], ctx: zmq.Context, stop: threading.Event) -> None:
    """This master's events and the topics its bus is listened to, from the EventPublisher
    (runtime.master.event_publisher)."""
    sock = transport.make_socket(ctx, zmq.PULL)
    sock.connect(transport.ipc_address(opts["sock_dir"], EVENT_RELAY))
    try:
        while not stop.is_set():
            if not sock.poll(200, zmq.POLLIN):
                continue
            for _ in range(1000):
                try:
                    frames = sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                if len(frames) == 2:
                    relay.observe(frames[0], frames[1])
                elif len(frames) == 3 and frames[0] == SUBSCRIPTIONS:
                    topics = unpack_topics(frames[2])
                    if topics is not None:
                        relay.topics = topics
    finally:
        sock.close(linger=0)


def _flusher(relay: Relay, stop: threading.Event, unavailable: RateLimitedLog) -> None:
    """An event goes out as soon as it is fired, unless another went less than ``FLUSH_GAP_S``
    ago: then it waits for the rest of the gap, and those fired meanwhile go with it (one insert
    and one notification for many, when many are fired)."""
    while not stop.is_set():
        if not relay.pending.wait(0.5):
            continue
        started = time.monotonic()
        try:
            while relay.flush() >= 500:
                pass
        except StoreUnavailable as exc:
            unavailable.warning("cluster:events", "events of this master not shared yet: %s", exc.message)
            stop.wait(1.0)
        except Exception:  # noqa: BLE001 - the relay must keep running
            log.exception("sharing events failed")
            stop.wait(1.0)
        stop.wait(max(0.0, FLUSH_GAP_S - (time.monotonic() - started)))


def run(opts: dict[str, Any], identity: Identity, stop: threading.Event) -> None:
    from runtime.master.worker import PUBLISH_PULL

    ctx = zmq.Context()
    stores = open_master_stores(opts)
    publish_sock = transport.make_socket(ctx, zmq.PUSH)
    publish_sock.connect(transport.ipc_address(opts["sock_dir"], PUBLISH_PULL))
    bus_sock = transport.make_socket(ctx, zmq.PUSH)
    bus_sock.connect(transport.ipc_address(opts["sock_dir"], EVENT_PULL))
    unavailable = RateLimitedLog(log, option(opts, "refusal_log_interval", float))
    relay: Relay | None = None
    threads: list[threading.Thread] = []
    last_prune = 0.0
    try:
        while relay is None and not stop.is_set():
            try:
                relay = Relay(opts, identity, stores.changes, stores.sessions, publish_sock, bus_sock)
            except StoreUnavailable as exc:
                unavailable.warning("cluster:start", "cluster relay waiting for the database: %s", exc.message)
                stop.wait(1.0)
        if relay is None:
            return
        for target, args in ((_bus_reader, (relay, opts, ctx, stop)), (_flusher, (relay, stop, unavailable))):
            thread = threading.Thread(target=target, args=args, daemon=True)
            thread.start()
            threads.append(thread)
        logs: Collection[str] = BOTH_LOGS
        last_both = 0.0
        while not stop.is_set():
            try:
                if time.monotonic() - last_both >= FULL_READ_S:
                    logs = BOTH_LOGS        # what a lost notification or a gap may hold
                relay.catch_up(logs)
                if logs == BOTH_LOGS:
                    last_both = time.monotonic()
                if time.monotonic() - last_prune > 60:
                    stores.changes.prune_events(EVENTS_KEEP_S)
                    last_prune = time.monotonic()
                wake = stores.changes.wait(1.0)
                relay.take_events(wake.events)
                logs = BOTH_LOGS if wake.timed_out else wake.logs
            except StoreUnavailable as exc:
                unavailable.warning("cluster:changes", "changes of the other masters not read now: %s", exc.message)
                logs = BOTH_LOGS
                stop.wait(1.0)
            except Exception:  # noqa: BLE001 - the relay must keep running
                log.exception("cluster relay pass failed")
                logs = BOTH_LOGS
                stop.wait(1.0)
    finally:
        stop.set()
        for thread in threads:
            thread.join(2.0)
        publish_sock.close(linger=0)
        bus_sock.close(linger=500)
        stores.close()
        ctx.term()

