"""`saltpan swarm` connects each minion from its own loopback address, as a fleet of hosts would
reach a master (its per-peer limits count by address), and Salt's source_address carries it."""

from __future__ import annotations

import socket

import pytest
import zmq

from runtime import transport
from runtime.minion.swarm import SOURCE_MAX, distinct_sources, loopback_source, swarm_opts


def test_each_index_has_its_own_loopback_address() -> None:
    assert loopback_source(0) == "127.64.0.1"
    assert loopback_source(255) == "127.64.1.0"
    assert loopback_source(9_999) == "127.64.39.16"
    assert loopback_source(SOURCE_MAX - 1) == "127.127.255.254"
    assert len({loopback_source(i) for i in range(70_000)}) == 70_000
    with pytest.raises(ValueError):
        loopback_source(SOURCE_MAX)


@pytest.mark.parametrize(("opts", "spread"), [
    ({}, True),
    ({"master": "127.0.0.1"}, True),
    ({"master": ["127.0.0.2", "127.0.0.3:4600"]}, True),
    ({"master": "10.1.2.3"}, False),                          # a remote master: the kernel's route decides
    ({"master": ["127.0.0.2", "salt.example.com"]}, False),
    ({"master": "127.0.0.1", "source_address": "127.9.9.9"}, False),   # the operator's choice wins
])
def test_sources_spread_only_towards_a_loopback_master(opts: dict, spread: bool) -> None:
    assert distinct_sources(opts) is spread


def test_swarm_opts_sets_the_source_address() -> None:
    assert swarm_opts({"root_dir": "/r"}, "m-1", "127.64.0.2")["source_address"] == "127.64.0.2"
    assert "source_address" not in swarm_opts({"root_dir": "/r"}, "m-1")


def test_a_zeromq_connection_leaves_from_the_source_address() -> None:
    """A real TCP listener on 127.0.0.1 sees the DEALER's connection come from the source."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    try:
        dealer.connect(transport.tcp_address_from("127.64.0.9", 0, "127.0.0.1", server.getsockname()[1]))
        conn, peer = server.accept()
        conn.close()
        assert peer[0] == "127.64.0.9"
    finally:
        dealer.close(linger=0)
        ctx.term()
        server.close()
