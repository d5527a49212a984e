"""`saltpan master`: the process manager and the processes it keeps running.

* Publisher: PULL publish_pull.ipc -> XPUB tcp publish_port (jobs; the boot announcement whenever a
  minion subscribes: runtime/master/announcer.py)
* EventPublisher: PULL master_event_pull.ipc -> PUB master_event_pub.ipc (in a cluster: XPUB, and
  PUSH master_event_relay.ipc to the ClusterRelay: runtime.master.event_publisher)
* ReqServer: ROUTER tcp ret_port <-> ROUTER workers.ipc (RequestProxy: checks, rate limits,
  per-class queues served in priority order)
* MWorkers (worker_threads): one request at a time from workers.ipc (runtime.master.worker)
* Maintenance: presence events, publish key rotation, job cache pruning
* ClusterRelay (master_store: postgres): jobs, revocations and events to and from the other
  masters sharing the store (runtime.master.cluster)
* GitfsUpdate (with gitfs or a git ext_pillar): fetches each git remote on its update interval

Each child is restarted when it dies.  SIGTERM stops them all and removes the
pid file; ipc sockets live in sock_dir (0700) and are 0600.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import zmq

from runtime import transport, transport_proxy
from runtime.config import OPTIONS, option
from runtime.crypt.clientkey import client_key_path, load_or_create_client_key
from runtime.crypt.identity import Identity, load_or_create_identity
from runtime.events import EVENT_PUB, EVENT_PULL
from runtime.log_setup import setup_daemon
from runtime.master import worker as worker_mod
from runtime.master.event_publisher import EVENT_RELAY
from runtime.private_files import ensure_private_dir
from runtime.profiling import run_profiled
from runtime.ratelog import RateLimitedLog
from runtime.transport_conns import ConnectionLimits
from runtime.transport_flows import ClientProofs, current_user
from runtime.transport_hellos import HelloBacklog

log = logging.getLogger("saltpan.master")

_MP = multiprocessing.get_context("fork")


def _child_setup(opts: dict[str, Any], name: str) -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    setup_daemon(opts)
    set_process_name(name)
    return stop


def set_process_name(name: str) -> None:
    """Name this process for ps, top and pgrep (``/proc/<pid>/comm``, 15 bytes on Linux):
    ``MWorker-0``, ``Publisher``, ``EventPublisher``, ``ReqServer``, ``Maintenance``, as Salt
    names its master processes."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def publisher_socket(ctx: zmq.Context, backlog: int = transport.DEFAULT_LIMITS.backlog) -> zmq.Socket:
    """The Publisher's XPUB: the subscriptions of (re)connecting minions reach it, each one, and so
    do the unsubscriptions of closed connections (VERBOSER): they make the boot announcement due,
    and pace it by the subscribers (runtime/master/announcer.py)."""
    pub = transport.make_socket(ctx, zmq.XPUB, transport.SocketLimits(sndhwm=100_000, backlog=backlog))
    pub.setsockopt(zmq.XPUB_VERBOSER, 1)
    return pub


def publisher_main(opts: dict[str, Any], identity: Identity) -> None:
    stop = _child_setup(opts, "Publisher")
    from runtime.crypt.announce import ANNOUNCE_TOPIC
    from runtime.master.announcer import Announcer
    from runtime.master.store import factory

    store = factory.open_session_store(opts)
    announcer = Announcer.from_opts(opts, identity, store.started_ms())
    store.close()
    ctx = zmq.Context()
    pull = transport.make_socket(ctx, zmq.PULL)
    transport.bind(pull, transport.ipc_address(opts["sock_dir"], worker_mod.PUBLISH_PULL))
    pub = publisher_socket(ctx, option(opts, "zmq_backlog", int))
    transport.bind(pub, transport.tcp_address(opts["interface"], int(opts["publish_port"])))
    poller = zmq.Poller()
    poller.register(pull, zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)
    try:
        while not stop.is_set():
            wait = announcer.wait_ms()
            events = dict(poller.poll(200 if wait is None else min(200, wait)))
            if pub in events:
                for _ in range(10_000):
                    try:
                        announcer.note_subscription(pub.recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
            if pull in events:
                frames = pull.recv_multipart()
                if len(frames) == 2:
                    transport.send_publication(pub, frames[1], frames[0])
            announcement = announcer.take()
            if announcement is not None:
                transport.send_publication(pub, announcement, ANNOUNCE_TOPIC)
    finally:
        pull.close(linger=0)
        pub.close(linger=0)
        ctx.term()


def event_publisher_main(opts: dict[str, Any]) -> None:
    from runtime.master import event_publisher
    from runtime.master.store import factory

    stop = _child_setup(opts, "EventPublisher")
    event_publisher.run(opts, stop, shared=factory.is_shared(opts))


def req_server_main(opts: dict[str, Any]) -> None:
    stop = _child_setup(opts, "ReqServer")
    transport_proxy.return_large_buffers_to_os()   # before libzmq's threads make their arenas
    ctx = zmq.Context()
    limits = transport.SocketLimits(max_message_size=option(opts, "max_message_size", int))
    front_limits = dataclasses.replace(limits, rcvhwm=transport_proxy.FRONTEND_RCVHWM,
                                       backlog=option(opts, "zmq_backlog", int))
    front = transport.make_socket(ctx, zmq.ROUTER, front_limits)
    transport.bind(front, transport.tcp_address(opts["interface"], int(opts["ret_port"])))
    back = transport.make_socket(ctx, zmq.ROUTER, limits)
    transport.bind(back, transport.ipc_address(opts["sock_dir"], worker_mod.WORKERS_IPC))
    per_peer_rate = option(opts, "clear_rate_per_peer", float)
    per_peer_burst = option(opts, "clear_burst_per_peer", float)
    per_peer = transport_proxy.TokenBucketLimiter(rate=per_peer_rate, burst=per_peer_burst)
    client_per_peer = transport_proxy.TokenBucketLimiter(rate=per_peer_rate, burst=per_peer_burst)
    global_bucket = transport_proxy.TokenBucketLimiter(rate=option(opts, "clear_rate_global", float),
                                                 burst=option(opts, "clear_burst_global", float))
    refusals = RateLimitedLog(log, option(opts, "refusal_log_interval", float))
    from runtime.master.announcer import admission_rate

    proxy = transport_proxy.RequestProxy(front, back, log=refusals,
                                   admit=transport_proxy.ClearRateLimit(per_peer, global_bucket, client_per_peer),
                                   connections=connection_limits(opts),
                                   proofs=ClientProofs(opts["cachedir"], current_user()),
                                   hellos=HelloBacklog(rate_floor=admission_rate(opts)))
    try:
        proxy.run(stop)
    finally:
        front.close(linger=0)
        back.close(linger=0)
        ctx.term()


def raise_open_files(opts: dict[str, Any]) -> int:
    """Raise this process's soft open-files limit to ``max_open_files`` (as Salt's master does), at
    most to the hard limit; the soft limit now (the processes forked after inherit it)."""
    import resource

    wanted = option(opts, "max_open_files", int)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target < wanted:
        log.info("max_open_files is %d but the hard open-files limit is %d: at most %d connections (one per "
                 "minion) can be held (raise it with LimitNOFILE= or ulimit -Hn)", wanted, hard, hard - 256)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("the open-files limit stays %d: raising it to %d failed (%s)", soft, target, exc)
    return soft


def connection_limits(opts: dict[str, Any]) -> ConnectionLimits:
    """The request port's connection bounds (runtime.transport_conns) from the config; at most as
    many connections as the open-files limit leaves room for."""
    import resource

    wanted = option(opts, "max_connections", int)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    allowed = wanted if soft == resource.RLIM_INFINITY else max(64, min(wanted, soft - 256))
    if allowed < wanted:
        # a warning when the operator asked for that many; the default asks for more than most limits give
        report = log.info if wanted == OPTIONS["max_connections"].default else log.warning
        report("max_connections %d lowered to %d: the open-files limit is %d (raise it with ulimit -n)",
               wanted, allowed, soft)
    heartbeat = option(opts, "heartbeat_period", float)
    return ConnectionLimits(max_connections=allowed, idle_s=max(300.0, 10 * heartbeat),
                            max_unfinished=option(opts, "max_unfinished_bytes", int),
                            max_message=option(opts, "max_message_size", int),
                            max_unread=option(opts, "max_unread_reply_bytes", int))


def worker_main(opts: dict[str, Any], identity: Identity, index: int) -> None:
    stop = _child_setup(opts, f"MWorker-{index}")
    worker_mod.run(opts, identity, index, stop)


def maintenance_main(opts: dict[str, Any]) -> None:
    from runtime.master import maintenance

    stop = _child_setup(opts, "Maintenance")
    maintenance.run(opts, stop)


def cluster_relay_main(opts: dict[str, Any], identity: Identity) -> None:
    from runtime.master import cluster

    stop = _child_setup(opts, "ClusterRelay")
    cluster.run(opts, identity, stop)


def gitfs_update_main(opts: dict[str, Any]) -> None:
    from runtime.master import gitfs_updater

    stop = _child_setup(opts, "GitfsUpdate")
    gitfs_updater.run(opts, stop)


def git_remotes(opts: dict[str, Any]) -> int:
    """How many git remotes (gitfs and git_pillar) the master serves; raises GitConfigError for a bad
    gitfs / git_pillar configuration, which keeps the master from starting (as Salt's does)."""
    from runtime.gitfs.remotes import configured_remotes  # no git library: the master process stays light

    return len(configured_remotes(opts))


class ProcessManager:
    """Starts children, restarts the ones that die, stops them all on request."""

    def __init__(self) -> None:
        self.specs: dict[str, tuple[Callable[..., None], tuple]] = {}
        self.procs: dict[str, multiprocessing.process.BaseProcess] = {}
        self.restarts: dict[str, list[float]] = {}

    def add(self, name: str, target: Callable[..., None], *args: Any) -> None:
        self.specs[name] = (target, args)

    def start(self, name: str) -> None:
        target, args = self.specs[name]
        # under cProfile with SALTPAN_PROFILE_DIR set (runtime.profiling: one .prof per process)
        proc = _MP.Process(target=run_profiled, args=(name, target, *args), name=f"saltpan-master-{name}",
                           daemon=False)
        proc.start()
        self.procs[name] = proc
        log.debug("started %s (pid %s)", name, proc.pid)

    def start_all(self) -> None:
        for name in self.specs:
            self.start(name)

    def check(self) -> None:
        for name, proc in list(self.procs.items()):
            if proc.is_alive():
                continue
            code = proc.exitcode
            recent = [t for t in self.restarts.get(name, []) if time.monotonic() - t < 60]
            delay = min(5.0, 0.1 * (2 ** len(recent))) if len(recent) > 3 else 0.0
            log.warning("%s (pid %s) exited with %s; restarting%s", name, proc.pid, code,
                        f" in {delay:.1f} s" if delay else "")
            if delay:
                time.sleep(delay)
            recent.append(time.monotonic())
            self.restarts[name] = recent
            self.start(name)

    def stop_all(self, timeout: float = 5.0) -> None:
        for proc in self.procs.values():
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs.values():
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)

    def pids(self) -> dict[str, int | None]:
        return {name: proc.pid for name, proc in self.procs.items()}


def prepare(opts: dict[str, Any]) -> Identity:
    """Directories, the master key pair, client keys, the master store checked (reachable, schema
    current), the cluster key (with cluster_id) and this master's sessions reset; the key the master
    signs with."""
    for name in (EVENT_PULL, EVENT_PUB, EVENT_RELAY, worker_mod.WORKERS_IPC, worker_mod.PUBLISH_PULL):
        transport.ipc_path(opts["sock_dir"], name)  # raises AddressError when sock_dir is too long
    for key in ("pki_dir", "cachedir", "sock_dir"):
        ensure_private_dir(opts[key])
    identity, created = load_or_create_identity(opts["pki_dir"], "master")
    if created:
        log.info("created the master key pair in %s (fingerprint %s)", opts["pki_dir"], identity.fingerprint)
    load_or_create_client_key(client_key_path(opts["cachedir"], _user()))
    for user in option(opts, "publisher_acl", dict):
        _client_key_for(opts["cachedir"], str(user))
    from runtime.master.store import factory

    factory.check_store(opts)
    cluster_key = factory.cluster_identity(opts, identity)
    if cluster_key is not identity:
        log.warning("cluster %s: signing with the cluster key %s (pki_dir/cluster.pub)", factory.cluster_id(opts),
                    cluster_key.fingerprint)
        identity = cluster_key
    store = factory.open_session_store(opts)
    try:
        store.reset()
    finally:
        store.close()   # before the children are forked: they open their own connections
    return identity


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _client_key_for(cachedir: str, user: str) -> None:
    import pwd

    path = client_key_path(cachedir, user)
    load_or_create_client_key(path)
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        log.warning("publisher_acl names user %r, who does not exist on this host", user)
        return
    if os.geteuid() == 0:
        os.chown(path, entry.pw_uid, entry.pw_gid)
        # the user must reach its key file: cachedir is traversable, not listable
        os.chmod(cachedir, 0o711)


def check_ports(opts: dict[str, Any]) -> None:
    """Fail at once, with the address, when a port the master needs is taken (instead of
    children dying and being restarted in a loop)."""
    import socket

    from runtime.transport import TransportError

    for key in ("publish_port", "ret_port"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((opts["interface"], int(opts[key])))
            except OSError as exc:
                raise TransportError(f"cannot bind {key} {opts['interface']}:{opts[key]}: {exc.strerror} "
                                     "(another master running?)") from None


def _accepting(opts: dict[str, Any]) -> bool:
    """Whether the ReqServer accepts connections yet (for systemd's READY=1)."""
    import socket

    host = opts["interface"] if opts["interface"] not in ("0.0.0.0", "") else "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, int(opts["ret_port"]))) == 0


def run(opts: dict[str, Any]) -> int:
    """Run the master until SIGTERM/SIGINT; 0 after a clean stop, 2 when it cannot start."""

    from runtime import pidfile, sdnotify
    from runtime.config import ConfigError
    from runtime.crypt.errors import KeyFileError
    from runtime.gitfs.remotes import GitConfigError
    from runtime.log_setup import LogFileError, cannot_start, setup_daemon
    from runtime.master.store.errors import StoreError
    from runtime.transport import TransportError

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    opts["__role"] = "master"
    try:
        setup_daemon(opts)
        remotes = git_remotes(opts)
        check_ports(opts)
        pidfile.claim(opts.get("pidfile"), "master")
    except (LogFileError, TransportError, pidfile.PidFileError, OSError, GitConfigError) as exc:
        return cannot_start("master", exc, log)
    try:
        identity = prepare(opts)
    except (OSError, KeyFileError, StoreError, ConfigError) as exc:
        pidfile.release(opts.get("pidfile"))
        return cannot_start("master", exc, log)
    raise_open_files(opts)      # before the processes are forked: the ReqServer holds a connection per minion
    manager = ProcessManager()
    manager.add("EventPublisher", event_publisher_main, opts)
    manager.add("Publisher", publisher_main, opts, identity)
    for index in range(max(1, option(opts, "worker_threads", int))):
        manager.add(f"MWorker-{index}", worker_main, opts, identity, index)
    manager.add("ReqServer", req_server_main, opts)
    manager.add("Maintenance", maintenance_main, opts)
    from runtime.master.store import factory

    if factory.is_shared(opts):
        manager.add("ClusterRelay", cluster_relay_main, opts, identity)
    if remotes:
        manager.add("GitfsUpdate", gitfs_update_main, opts)
    manager.start_all()
    log.info("master started: ret_port %s, publish_port %s, %d workers (pid %d)", opts["ret_port"],
                opts["publish_port"], option(opts, "worker_threads", int), os.getpid())
    ready = False
    try:
        while not stop.wait(0.2):
            manager.check()
            if not ready and _accepting(opts):
                sdnotify.notify(f"READY=1\nSTATUS=serving on ports {opts['publish_port']}/{opts['ret_port']}")
                ready = True
    finally:
        sdnotify.notify("STOPPING=1")
        manager.stop_all()
        pidfile.release(opts.get("pidfile"))
        log.info("master stopped")
    return 0
