from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import zmq

from runtime.transport import bind, make_socket, tcp_address


@pytest.fixture
def fleet_factory():
    from tests.crypto.conftest import make_fleet
    return make_fleet


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


class RouterServer:
    """A real ROUTER on 127.0.0.1 (free port) answering with ``handler(frames) -> frames | None``."""

    def __init__(self, ctx: zmq.Context, handler: Callable[[list[bytes]], list[bytes] | None],
                 address: str | None = None) -> None:
        self.sock = make_socket(ctx, zmq.ROUTER)
        self.endpoint = bind(self.sock, address or tcp_address("127.0.0.1", 0))
        self.handler = handler
        self.received: list[list[bytes]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            frames = self.sock.recv_multipart()
            self.received.append(frames)
            reply = self.handler(frames)
            if reply is not None:
                self.sock.send_multipart(reply)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close(linger=0)


@pytest.fixture
def router(ctx):
    servers = []

    def start(handler, address=None):
        server = RouterServer(ctx, handler, address)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
