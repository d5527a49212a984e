"""`saltpan swarm --count N`: N lightweight minions in one process, for load tests only.

Like Salt's minionswarm tool: every minion is a full ``Minion`` (its own key
pair, session, heartbeat, subscription and jobs) but they share one event loop,
one ZeroMQ context, one job thread pool, one set of core grains and one trusted
master key (``<root_dir>/swarm/minion_master.pub``).  Keys live under
``<root_dir>/swarm/<id>/pki`` so a restarted swarm keeps its accepted keys.

A minion holds about ``FDS_PER_MINION`` file descriptors (two TCP connections and
their ZeroMQ mailboxes); when the process's hard limit on open files cannot hold
``count`` of them, the swarm forks into as many processes as it needs, each
running a contiguous slice of the ids (``PREFIX0000`` ... in order), and stops
them all on SIGTERM/SIGINT.  More than one process also spreads the minions'
work over the cores.

A real fleet reaches its master from as many addresses as it has hosts, and the master's per-peer
limits (clear_rate_per_peer, the fair queue's lanes, connection counts) count by address.  So when
the master is on loopback and the config sets no ``source_address``, minion number ``i`` connects
from its own loopback address, ``127.64.0.0 + i + 1`` (all of 127.0.0.0/8 is the loopback
interface on Linux); ``--one-source`` keeps them all on the kernel's choice, as one host.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import logging
import os
import resource
import signal
import time
from typing import Any

import zmq
import zmq.asyncio

from runtime.config import option, optional_option
from runtime.crypt.identity import load_or_create_identity
from runtime.crypt.trust import MasterTrust
from runtime.minion.daemon import Minion

log = logging.getLogger("saltpan.swarm")


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted))
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


SOURCE_BASE = (127 << 24) | (64 << 16)     # 127.64.0.0: far from the masters' 127.0.0.x
SOURCE_MAX = (1 << 22) - 2                 # up to 127.127.255.254


def loopback_source(index: int) -> str:
    """The loopback address swarm minion ``index`` connects from."""
    if not 0 <= index < SOURCE_MAX:
        raise ValueError(f"no loopback source address for minion {index}")
    value = SOURCE_BASE + index + 1
    return ".".join(str((value >> shift) & 255) for shift in (24, 16, 8, 0))


def distinct_sources(base: dict[str, Any]) -> bool:
    """Whether each minion gets its own source address: the master(s) on loopback and no
    ``source_address`` set."""
    if base.get("source_address"):
        return False
    masters = base.get("master") or "127.0.0.1"
    return all(isinstance(m, str) and m.startswith("127.") for m in (masters if isinstance(masters, list) else [masters]))


def swarm_root(base: dict[str, Any]) -> str:
    """Where the swarm keeps its minions' directories, and its trusted master key."""
    return os.path.join(base.get("root_dir") or "/tmp", "swarm")


def swarm_opts(base: dict[str, Any], minion_id: str, source: str = "") -> dict[str, Any]:
    """One minion's config: ``base`` with its own id, directories and source address.  The nested
    values (lists, dicts) are ``base``'s own, shared by the swarm's minions (a minion changes only
    top-level keys of its config): a deep copy each took most of a 10,000-minion swarm's start."""
    opts = dict(base)
    root = os.path.join(swarm_root(base), minion_id)
    opts.update(id=minion_id, pki_dir=os.path.join(root, "pki"), cachedir=os.path.join(root, "cache"),
                sock_dir=os.path.join(root, "sock"), log_file=None, pidfile=None)
    if source:
        opts["source_address"] = source
    return opts


FDS_PER_MINION = 5
FDS_PER_FAILOVER_MINION = 12   # with a master list: a monitor on the publish connection
FDS_SPARE = 256


def slices(count: int, hard_limit: int) -> list[range]:
    """The minion indexes each swarm process runs: as few processes as the open-files limit allows."""
    per_process = max(1, (hard_limit - FDS_SPARE) // FDS_PER_MINION)
    processes = max(1, -(-count // per_process))
    size = -(-count // processes)
    return [range(start, min(count, start + size)) for start in range(0, count, size)]


def build_minions(opts: dict[str, Any], indexes: range, prefix: str, ctx: zmq.asyncio.Context,
                  executor: concurrent.futures.Executor, one_source: bool = False) -> list[Minion]:
    from runtime import grains as grains_mod

    core = grains_mod.core_grains()
    core.update(opts.get("grains") or {})
    minions = []
    spread = not one_source and distinct_sources(opts)
    base = copy.deepcopy(opts)      # the caller's config stays the caller's
    # one trusted master key for the swarm (its minions talk to the same masters), beside their
    # directories: 10,000 files written at first contact cost the swarm a tenth of its CPU in a storm
    trust = MasterTrust(swarm_root(base), optional_option(base, "master_finger", str), durable=False)
    for index in indexes:
        minion_id = f"{prefix}{index:04d}"
        mopts = swarm_opts(base, minion_id, loopback_source(index) if spread else "")
        # throwaway keys of simulated hosts: no fsync (three per minion stalled a swarm's event loop
        # for seconds at each first launch; a real minion keeps them durable)
        identity, _ = load_or_create_identity(mopts["pki_dir"], "minion", durable=False)
        grains = dict(core)
        grains["id"] = minion_id
        minions.append(Minion(mopts, ctx=ctx, executor=executor, identity=identity, grains=grains, quiet=True,
                              trust=trust))
    return minions


async def run_swarm(opts: dict[str, Any], count: int | range, prefix: str, stop: asyncio.Event,
                    ready: asyncio.Event | None = None, one_source: bool = False) -> None:
    indexes = range(count) if isinstance(count, int) else count
    count = len(indexes)
    # a soft limit with room for failover minions too (their monitor socket pair): raising it costs nothing
    raise_fd_limit(count * FDS_PER_FAILOVER_MINION + FDS_SPARE)
    ctx = zmq.asyncio.Context()
    ctx.set(zmq.MAX_SOCKETS, max(1024, count * 6 + 256))
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=min(64, count + 4), thread_name_prefix="swarm")
    minions = build_minions(opts, indexes, prefix, ctx, executor, one_source)
    started = time.monotonic()
    tasks = []
    stagger = option(opts, "swarm_start_spread", float)
    for index, minion in enumerate(minions):
        tasks.append(asyncio.create_task(minion.run(stop), name=minion.id))
        if index % 50 == 49:
            # each minion runs to its first hello before anything else happens on the loop: started
            # all in one go, the first replies waited for thousands of hellos to be signed and sent
            # (seconds), past auth_timeout for some (1,300-2,900 unanswered hellos in a 10,000-minion
            # launch); hosts of their own would read their replies meanwhile
            await asyncio.sleep(stagger)
    log.warning("swarm of %d minions started in %.2f s", count, time.monotonic() - started)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        await asyncio.gather(*tasks, return_exceptions=True)
        executor.shutdown(wait=False, cancel_futures=True)
        ctx.destroy(linger=0)


def run(opts: dict[str, Any], count: int, prefix: str = "swarm-", one_source: bool = False) -> int:
    from runtime.log_setup import setup as setup_logging

    setup_logging(opts.get("log_level") or "warning", opts.get("log_file"))
    parts = slices(count, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    if len(parts) == 1:
        _run_slice(opts, parts[0], prefix, one_source)
        return 0
    log.warning("swarm of %d minions: %d processes of up to %d (the open-files limit)", count, len(parts),
                len(parts[0]))
    children = []
    for part in parts:
        pid = os.fork()
        if pid == 0:   # the child runs its slice and never returns into the parent's code
            code = 1
            try:
                _run_slice(opts, part, prefix, one_source)
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    return _wait_children(children)


def _run_slice(opts: dict[str, Any], indexes: range, prefix: str, one_source: bool) -> None:
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_swarm(opts, indexes, prefix, stop, one_source=one_source)

    asyncio.run(main())


def _wait_children(children: list[int]) -> int:
    """Parent of a multi-process swarm: pass SIGTERM/SIGINT on to the children, wait for them all."""
    def forward(signum: int, _frame: object) -> None:
        for pid in children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    failed = 0
    for pid in children:
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                status = 0
                break
        failed += os.waitstatus_to_exitcode(status) != 0
    return 1 if failed else 0
