"""Publish/subscribe on 127.0.0.1: broadcast and per-minion topics, malformed frames dropped, and a
sealed, signed publication carried end to end."""

from __future__ import annotations

import time

import zmq

from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublicationReceiver, PublishKey, seal_publication
from runtime.transport import (
    BROADCAST,
    bind,
    make_socket,
    make_subscriber,
    minion_topic,
    recv_publication,
    send_publication,
    tcp_address,
)


def connected_pair(ctx, minion_id):
    pub = make_socket(ctx, zmq.PUB)
    endpoint = bind(pub, tcp_address("127.0.0.1", 0))
    sub = make_subscriber(ctx, endpoint, minion_id)
    # subscriptions travel asynchronously: publish probes until one arrives
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        send_publication(pub, b"probe")
        if recv_publication(sub, 50) is not None:
            break
    while recv_publication(sub, 50) is not None:
        pass
    return pub, sub


def test_topics(ctx):
    pub, sub = connected_pair(ctx, "web1")
    send_publication(pub, b"to-all")
    send_publication(pub, b"to-web2", minion_topic("web2"))
    send_publication(pub, b"to-web1", minion_topic("web1"))
    got = [recv_publication(sub, 1000), recv_publication(sub, 200)]
    assert got == [(BROADCAST, b"to-all"), (minion_topic("web1"), b"to-web1")]
    assert len(minion_topic("a")) == len(minion_topic("a-much-longer-minion-id"))
    pub.close()
    sub.close()


def test_malformed_publications_are_dropped(ctx):
    pub, sub = connected_pair(ctx, None)
    pub.send_multipart([BROADCAST])
    pub.send_multipart([BROADCAST, b"a", b"b"])
    send_publication(pub, b"good")
    assert recv_publication(sub, 1000) == (BROADCAST, b"good")
    pub.close()
    sub.close()


def test_signed_publication_over_the_wire(ctx):
    master = Identity.generate()
    pkey = PublishKey.generate(1)
    receiver = PublicationReceiver(master.public_raw, pkey)
    pub, sub = connected_pair(ctx, "web1")
    send_publication(pub, seal_publication(master, pkey, 1, {"fun": "test.ping", "jid": "1"}))
    topic, body = recv_publication(sub, 1000)
    assert receiver.open(body).payload == {"fun": "test.ping", "jid": "1"}
    pub.close()
    sub.close()
