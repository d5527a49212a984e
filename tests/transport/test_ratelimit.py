"""Token buckets per peer, with bounded memory."""

from __future__ import annotations

import pytest

from runtime import codec
from runtime.protocol import MessageClass, classify
from runtime.transport_proxy import ClearRateLimit, TokenBucketLimiter


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_burst_then_rate():
    clock = Clock()
    limiter = TokenBucketLimiter(rate=2, burst=3, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b")                   # peers are independent
    clock.now = 0.5                              # one token back
    assert limiter.allow("a") and not limiter.allow("a")
    clock.now = 100                              # never more than the burst
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]


def test_cost():
    limiter = TokenBucketLimiter(rate=1, burst=5, clock=Clock())
    assert limiter.allow("a", cost=5) and not limiter.allow("a", cost=1)


def test_memory_is_bounded_under_many_sources():
    clock = Clock()
    limiter = TokenBucketLimiter(rate=1, burst=2, max_peers=100, clock=clock)
    for i in range(10_000):
        limiter.allow(f"10.0.{i // 256}.{i % 256}")
    assert len(limiter) == 100


def test_clear_policy():
    clock = Clock()
    policy = ClearRateLimit(TokenBucketLimiter(rate=1, burst=1, clock=clock),
                            TokenBucketLimiter(rate=1, burst=2, clock=clock))
    hello = classify(codec.pack_envelope("clear", {"cmd": "_auth"}))
    sealed = classify(codec.pack_envelope("aes", {"h": b"", "ct": b""}))
    assert (hello, sealed) == (MessageClass.AUTH, MessageClass.SESSION)
    assert policy("1.1.1.1", hello) is None
    assert policy("1.1.1.1", hello) == "rate_limited"
    assert policy("2.2.2.2", hello) is None
    assert policy("3.3.3.3", hello) == "busy"        # the global bucket is empty
    assert policy("1.1.1.1", sealed) is None
    assert classify(b"\xc1 not msgpack") is MessageClass.AUTH   # garbage counts as a hello
    assert policy("1.1.1.1", classify(b"\xc1 not msgpack")) == "rate_limited"


def test_client_requests_have_their_own_bucket():
    clock = Clock()
    policy = ClearRateLimit(TokenBucketLimiter(rate=1, burst=1, clock=clock), TokenBucketLimiter(rate=1, burst=1,
                                                                                                  clock=clock),
                            client_per_peer=TokenBucketLimiter(rate=1, burst=2, clock=clock))
    publish = classify(codec.pack_envelope("clear", {"cmd": "publish", "body": b"", "proof": {}}))
    assert publish is MessageClass.CLIENT
    assert policy("1.1.1.1", MessageClass.AUTH) is None
    assert policy("2.2.2.2", MessageClass.AUTH) == "busy"       # the global bucket is empty
    assert policy("1.1.1.1", publish) is None                   # ... which clients are not charged to
    assert policy("1.1.1.1", publish) is None
    assert policy("1.1.1.1", publish) == "rate_limited"


def test_invalid():
    with pytest.raises(ValueError):
        TokenBucketLimiter(rate=0, burst=1)
