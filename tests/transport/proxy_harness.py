"""A request proxy (runtime.transport_proxy.RequestProxy) on a free 127.0.0.1 port in front of worker
threads that take one request at a time, as the master's MWorkers do: real sockets for the tests
of what the proxy bounds and schedules.  A test's server says what a worker does with a request
(:meth:`ProxyHarness.serve`); :func:`harness_factory` starts them and closes every one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import zmq

from runtime.transport import (
    WorkerRequest,
    WorkerSocket,
    bind,
    ipc_address,
    make_socket,
    tcp_address,
)
from runtime.transport_proxy import RequestProxy


class ProxyHarness:
    def __init__(self, ctx: zmq.Context, sock_dir: str, workers: int = 1, *, proxy_args: tuple[Any, ...] = (),
                 **proxy_options: Any) -> None:
        """``proxy_options`` go to RequestProxy, ``proxy_args`` to its ``run`` after the stop event."""
        self.frontend = make_socket(ctx, zmq.ROUTER)
        self.endpoint = bind(self.frontend, tcp_address("127.0.0.1", 0))
        self.port = int(self.endpoint.rsplit(":", 1)[1])
        self.backend = make_socket(ctx, zmq.ROUTER)
        address = ipc_address(sock_dir, "workers.ipc")
        bind(self.backend, address)
        self.proxy = RequestProxy(self.frontend, self.backend, **proxy_options)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.proxy.run, args=(self.stop, *proxy_args), daemon=True)]
        self.threads += [threading.Thread(target=self._worker, args=(ctx, address), daemon=True)
                         for _ in range(workers)]
        for thread in self.threads:
            thread.start()

    def serve(self, sock: WorkerSocket, request: WorkerRequest) -> None:
        """Answer one request (the default echoes it)."""
        sock.reply(request, request.body)

    def _worker(self, ctx: zmq.Context, address: str) -> None:
        sock = WorkerSocket(ctx, address)
        while not self.stop.is_set():
            request = sock.recv(50)
            if request is not None:
                self.serve(sock, request)
        sock.close()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)
        self.frontend.close(linger=0)
        self.backend.close(linger=0)


H = TypeVar("H", bound=ProxyHarness)


def harness_factory(make: Callable[..., H], ctx: zmq.Context, tmp_path: Path) -> Iterator[Callable[..., H]]:
    """For a fixture: ``start(*args)`` builds ``make(ctx, <own sock_dir>, *args)``; all are closed
    when the test ends."""
    made: list[H] = []

    def start(*args: Any, **kwargs: Any) -> H:
        made.append(make(ctx, str(tmp_path / f"h{len(made)}"), *args, **kwargs))
        return made[-1]

    yield start
    for harness in made:
        harness.close()
