"""Auth handshake cost and a loopback auth storm (saltpan only; not a test).

    .venv/bin/python bench/auth_storm.py [--minions 1000] [--workers 2] [--skip-storm]

1. One core, in process: the master's whole ``_auth`` handler (signature check, shared nonce
   claim, key store lookup on disk, session insert in SQLite, X25519, HKDF, sealed grant, signed
   reply) for N pre-built hellos, then the minion's side (building hellos, verifying replies).
2. Storm: a ReqServer proxy process and ``--workers`` MWorker-like processes on 127.0.0.1, and
   one client process with N DEALER sockets (one TCP connection per minion, as real minions have)
   that authenticate all at once.  Everything shares this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zmq  # noqa: E402
import zmq.asyncio  # noqa: E402

from runtime import codec  # noqa: E402
from runtime.crypt.handshake import finish_auth, start_auth  # noqa: E402
from runtime.crypt.identity import Identity, load_or_create_identity  # noqa: E402
from runtime.master.auth import AuthService, AuthSettings  # noqa: E402
from runtime.master.store import factory  # noqa: E402
from runtime.transport import (  # noqa: E402
    WorkerSocket,
    bind,
    ipc_address,
    make_socket,
    recv_request,
    send_reply,
    tcp_address,
)
from runtime.transport_async import AsyncRequestClient  # noqa: E402
from runtime.transport_proxy import RequestProxy  # noqa: E402


class TrustAll:
    def check(self, master_pub: bytes) -> None:
        pass

    def remember(self, master_pub: bytes) -> None:
        pass


def store_opts(root: str, max_pending: int, sock: str = "sock") -> dict[str, object]:
    """The master's stores under ``root`` (master_store: sqlite, as a default master has them)."""
    return {"pki_dir": os.path.join(root, "pki"), "cachedir": os.path.join(root, "cache"),
            "sock_dir": os.path.join(root, sock), "max_pending_keys": max_pending}


def setup(root: str, minions: int) -> tuple[Identity, list[tuple[str, Identity]]]:
    master, _ = load_or_create_identity(os.path.join(root, "pki"), "master")
    keys = factory.open_key_store(store_opts(root, minions + 10))
    fleet = [(f"minion-{i:05d}", Identity.generate()) for i in range(minions)]
    for minion_id, identity in fleet:
        keys.admit(minion_id, identity.public_raw, auto_accept=True)
    return master, fleet


def in_process(root: str, master: Identity, fleet: list[tuple[str, Identity]]) -> None:
    opts = store_opts(root, len(fleet) + 10, sock="inproc-sock")
    keys = factory.open_key_store(opts)
    store = factory.open_session_store(opts)
    service = AuthService(master, keys, store, AuthSettings())
    t0 = time.perf_counter()
    attempts = [start_auth(identity, minion_id) for minion_id, identity in fleet]
    t1 = time.perf_counter()
    loads = [codec.unpack_envelope(codec.pack_envelope("clear", a.load)).load for a in attempts]
    t2 = time.perf_counter()
    replies = [codec.pack_envelope("clear", service.handle(load).reply) for load in loads]
    t3 = time.perf_counter()
    results = [finish_auth(a, codec.unpack_envelope(r).load, TrustAll()) for a, r in zip(attempts, replies, strict=True)]
    t4 = time.perf_counter()
    assert all(r.outcome == "accepted" for r in results)
    n = len(fleet)
    print(f"one core, {n} auths of accepted minions:")
    print(f"  master _auth handler (decode + handle + encode): {n / (t3 - t2):8.0f} auth/s "
          f"({(t3 - t2) / n * 1e6:6.0f} us each)")
    print(f"  minion: build signed hello                     : {n / (t1 - t0):8.0f} /s "
          f"({(t1 - t0) / n * 1e6:6.0f} us each)")
    print(f"  minion: verify reply, derive keys, open grant  : {n / (t4 - t3):8.0f} /s "
          f"({(t4 - t3) / n * 1e6:6.0f} us each)")
    store.close()


def run_worker(root: str, workers_addr: str, stop_path: str) -> None:
    master, _ = load_or_create_identity(os.path.join(root, "pki"), "master")
    opts = store_opts(root, 1_000_000)
    keys = factory.open_key_store(opts)
    store = factory.open_session_store(opts)
    service = AuthService(master, keys, store, AuthSettings())
    ctx = zmq.Context()
    sock = WorkerSocket(ctx, workers_addr)
    while not os.path.exists(stop_path):
        request = recv_request(sock, 200)
        if request is None:
            continue
        try:
            env = codec.unpack_envelope(request.body)
            reply = service.handle(env.load).reply
        except codec.DecodeError as exc:
            reply = codec.error_load(exc.reason, str(exc))
        send_reply(sock, request, codec.pack_envelope("clear", reply))
    sock.close()
    ctx.destroy(linger=0)


def run_proxy(root: str, port_pipe, stop_path: str) -> None:
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 4096)
    frontend = make_socket(ctx, zmq.ROUTER)
    endpoint = bind(frontend, tcp_address("127.0.0.1", 0))
    backend = make_socket(ctx, zmq.ROUTER)
    bind(backend, ipc_address(os.path.join(root, "sock"), "workers.ipc"))
    port_pipe.send(endpoint)
    stop = threading.Event()
    proxy = RequestProxy(frontend, backend)
    thread = threading.Thread(target=proxy.run, args=(stop,), daemon=True)
    thread.start()
    while not os.path.exists(stop_path):
        time.sleep(0.1)
    stop.set()
    thread.join(5)
    frontend.close(linger=0)
    backend.close(linger=0)
    ctx.destroy(linger=0)


def run_clients(endpoint: str, fleet: list[tuple[str, Identity]], out) -> None:
    async def main() -> tuple[float, int, int]:
        ctx = zmq.asyncio.Context()
        ctx.set(zmq.MAX_SOCKETS, 4096)
        clients = [AsyncRequestClient(endpoint, ctx=ctx, timeout=30, tries=2) for _ in fleet]
        ok = retries = 0

        async def one(client: AsyncRequestClient, minion_id: str, identity: Identity) -> str:
            attempt, reply = await client.request_with(
                lambda: (a := start_auth(identity, minion_id), codec.pack_envelope("clear", a.load)))
            return finish_auth(attempt, codec.unpack_envelope(reply).load, TrustAll()).outcome

        start = time.perf_counter()
        outcomes = await asyncio.gather(*(one(c, mid, ident) for c, (mid, ident) in zip(clients, fleet, strict=True)),
                                        return_exceptions=True)
        elapsed = time.perf_counter() - start
        ok = sum(1 for o in outcomes if o == "accepted")
        retries = sum(c.reconnects for c in clients)
        for client in clients:
            client.close()
        ctx.destroy(linger=0)
        return elapsed, ok, retries

    out.send(asyncio.run(main()))


def storm(root: str, fleet: list[tuple[str, Identity]], workers: int) -> None:
    mp = multiprocessing.get_context("fork")
    stop_path = os.path.join(root, "stop")
    factory.open_session_store(store_opts(root, len(fleet) + 10)).reset()
    recv_end, send_end = mp.Pipe(duplex=False)
    procs = [mp.Process(target=run_proxy, args=(root, send_end, stop_path))]
    procs[0].start()
    endpoint = recv_end.recv()
    workers_addr = ipc_address(os.path.join(root, "sock"), "workers.ipc")
    procs += [mp.Process(target=run_worker, args=(root, workers_addr, stop_path)) for _ in range(workers)]
    for proc in procs[1:]:
        proc.start()
    time.sleep(0.5)  # let the workers connect
    out_recv, out_send = mp.Pipe(duplex=False)
    client = mp.Process(target=run_clients, args=(endpoint, fleet, out_send))
    client.start()
    try:
        elapsed, ok, reconnects = out_recv.recv()
    finally:
        client.join(60)
        open(stop_path, "w").close()
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    print(f"storm on {os.cpu_count()} cores: {len(fleet)} minions (one TCP connection each) -> proxy -> "
          f"{workers} workers on 127.0.0.1")
    print(f"  {ok}/{len(fleet)} accepted in {elapsed:.2f} s ({ok / elapsed:.0f} auth/s end to end, "
          f"{reconnects} client reconnects)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-storm", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="saltpan-auth-bench-") as root:
        master, fleet = setup(root, args.minions)
        in_process(root, master, fleet)
        if not args.skip_storm:
            storm(root, fleet, args.workers)


if __name__ == "__main__":
    main()
