"""A job to a list of minions reaches the Publisher as one message per minion topic, or as one
broadcast when the list is long (a message per minion overflowed the Publisher's queue at 10,000)."""

from __future__ import annotations

import pytest
import zmq

from runtime import transport
from runtime.crypt.identity import Identity
from runtime.master.handlers.context import WorkerContext
from runtime.master.handlers.jobs import TOPICS_MAX, JobHandlers


@pytest.fixture
def wired(tmp_path):
    opts = {"pki_dir": str(tmp_path / "pki"), "sock_dir": str(tmp_path / "sock"), "cachedir": str(tmp_path / "cache")}
    zctx = zmq.Context()
    address = transport.ipc_address(opts["sock_dir"], "pub.ipc")
    pull = zctx.socket(zmq.PULL)
    pull.bind(address)
    ctx = WorkerContext.open(opts, Identity.generate(), zctx, address)
    try:
        yield JobHandlers(ctx), pull
    finally:
        ctx.close()
        pull.close(linger=0)
        zctx.term()


def _topics(pull: zmq.Socket) -> list[bytes]:
    out = []
    while pull.poll(500, zmq.POLLIN):
        out.append(pull.recv_multipart()[0])
    return out


def test_short_list_goes_to_each_minions_topic(wired) -> None:
    handlers, pull = wired
    handlers.send_publication({"jid": "1", "fun": "test.ping"}, ["a", "b", "c"])
    assert _topics(pull) == [transport.minion_topic(m) for m in ("a", "b", "c")]


def test_long_list_is_one_broadcast(wired) -> None:
    handlers, pull = wired
    handlers.send_publication({"jid": "2", "fun": "test.ping"}, [f"m{i}" for i in range(TOPICS_MAX + 1)])
    assert _topics(pull) == [transport.BROADCAST]
