"""`saltpan swarm --count N`: N lightweight minions in one process, for load tests only.

Like Salt's minionswarm tool: every minion is a full ``Minion`` (its own key
pair, session, heartbeat, subscription and jobs) but they share one event loop,
one ZeroMQ context, one job thread pool and one set of core grains.  Keys live
under ``<root_dir>/swarm/<id>/pki`` so a restarted swarm keeps its accepted keys.
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

from runtime.config import option
from runtime.crypt.identity import load_or_create_identity
from runtime.minion.daemon import Minion

log = logging.getLogger("saltpan.swarm")


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted))
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def swarm_opts(base: dict[str, Any], minion_id: str) -> dict[str, Any]:
    opts = copy.deepcopy(base)
    root = os.path.join(base.get("root_dir") or "/tmp", "swarm", minion_id)
    opts.update(id=minion_id, pki_dir=os.path.join(root, "pki"), cachedir=os.path.join(root, "cache"),
                sock_dir=os.path.join(root, "sock"), log_file=None, pidfile=None)
    return opts


def build_minions(opts: dict[str, Any], count: int, prefix: str, ctx: zmq.asyncio.Context,
                  executor: concurrent.futures.Executor) -> list[Minion]:
    from runtime import grains as grains_mod

    core = grains_mod.core_grains()
    core.update(opts.get("grains") or {})
    minions = []
    for index in range(count):
        minion_id = f"{prefix}{index:04d}"
        mopts = swarm_opts(opts, minion_id)
        identity, _ = load_or_create_identity(mopts["pki_dir"], "minion")
        grains = dict(core)
        grains["id"] = minion_id
        minions.append(Minion(mopts, ctx=ctx, executor=executor, identity=identity, grains=grains, quiet=True))
    return minions


async def run_swarm(opts: dict[str, Any], count: int, prefix: str, stop: asyncio.Event,
                    ready: asyncio.Event | None = None) -> None:
    raise_fd_limit(count * 12 + 256)       # per minion: request and publish sockets, a monitor with failover
    ctx = zmq.asyncio.Context()
    ctx.set(zmq.MAX_SOCKETS, max(1024, count * 6 + 256))
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=min(64, count + 4), thread_name_prefix="swarm")
    minions = build_minions(opts, count, prefix, ctx, executor)
    started = time.monotonic()
    tasks = []
    stagger = option(opts, "swarm_start_spread", float)
    for index, minion in enumerate(minions):
        tasks.append(asyncio.create_task(minion.run(stop), name=minion.id))
        if stagger and index % 50 == 49:
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


def run(opts: dict[str, Any], count: int, prefix: str = "swarm-") -> int:
    from runtime.log_setup import setup as setup_logging

    setup_logging(opts.get("log_level") or "warning", opts.get("log_file"))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_swarm(opts, count, prefix, stop)

    asyncio.run(main())
    return 0
