"""The master's boot announcement (issue 20): signed, fresh, and acted on once per boot."""

from __future__ import annotations

import asyncio
import time

import pytest
import zmq
import zmq.asyncio

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.announce import (
    ANNOUNCE_TOPIC,
    MAX_SPREAD_S,
    Announcement,
    AnnouncementRefused,
    hint_topic,
    hinted_ms,
    open_announcement,
    peek_announcement,
    seal_announcement,
)
from runtime.crypt.handshake import now_ms
from runtime.crypt.identity import Identity
from runtime.master.announcer import (
    COPIES_PER_S,
    MAX_GAP_S,
    MIN_GAP_S,
    Announcer,
    admission_rate,
    count_accepted,
)
from runtime.master.daemon import publisher_socket
from runtime.minion.watch import MasterWatch


def announcement(started: int = 1_000, ts: int | None = None, fleet: int = 20, rate: float = 800.0,
                 boot: bytes = b"b" * 16) -> Announcement:
    return Announcement(boot, started, now_ms() if ts is None else ts, fleet, rate)


def refusal(master_pub: bytes, data: bytes, **kwargs: int) -> str:
    with pytest.raises(AnnouncementRefused) as err:
        open_announcement(master_pub, data, **kwargs)
    return err.value.reason


def test_round_trip_and_spread_grows_with_the_fleet() -> None:
    master = Identity.generate()
    sent = announcement(fleet=1000, rate=500.0)
    got = open_announcement(master.public_raw, seal_announcement(master, sent))
    assert got == sent
    assert got.spread_s() == pytest.approx(2.0)
    assert announcement(fleet=20, rate=500.0).spread_s() == pytest.approx(0.04)
    assert announcement(fleet=0).spread_s() == 0.0
    assert announcement(fleet=10**9, rate=1.0).spread_s() == MAX_SPREAD_S


def test_signature_by_another_key_or_any_changed_byte_is_refused() -> None:
    master, other = Identity.generate(), Identity.generate()
    data = seal_announcement(master, announcement())
    assert refusal(other.public_raw, data) == "bad_signature"
    outer = codec.unpack(data)
    body = codec.unpack(outer["a"])
    body["fleet"] = 1                                    # a smaller fleet: everyone at once
    forged = codec.pack({"a": codec.pack(body), "sig": outer["sig"]})
    assert refusal(master.public_raw, forged) == "bad_signature"
    for index in range(len(data)):
        changed = data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]
        with pytest.raises(AnnouncementRefused):
            open_announcement(master.public_raw, changed)


def test_malformed_and_stale_announcements_are_refused() -> None:
    master = Identity.generate()
    assert refusal(master.public_raw, b"\xc1") == "malformed"
    assert refusal(master.public_raw, codec.pack({"a": b"x"})) == "malformed"

    def signed(fields: dict) -> bytes:
        body = codec.pack(fields)
        return codec.pack({"a": body, "sig": master.sign(aead.transcript("announcement", body))})

    good = {"v": 1, "boot": b"b" * 16, "started": 1, "ts": now_ms(), "fleet": 3, "rate": 10.0}
    assert open_announcement(master.public_raw, signed(good)).fleet == 3
    for key, value in (("rate", 0.0), ("rate", float("inf")), ("fleet", -1), ("boot", b"short"),
                       ("started", now_ms() + 10_000_000), ("v", 2), ("rate", 5)):
        assert refusal(master.public_raw, signed({**good, key: value})) == "malformed", key
    assert refusal(master.public_raw, signed({**good, "extra": 1})) == "malformed"
    old = seal_announcement(master, announcement(ts=now_ms() - 400_000))
    assert refusal(master.public_raw, old) == "stale"
    # the minion's clock is 400 s behind the master's: its offset makes the same bytes fresh
    assert open_announcement(master.public_raw, seal_announcement(master, announcement()),
                             clock_offset_ms=0).fleet == 20
    assert refusal(master.public_raw, seal_announcement(master, announcement()), clock_offset_ms=-400_000) == \
        "future"


def test_a_minion_acts_once_per_boot_and_never_on_an_older_run() -> None:
    master = Identity.generate()
    ctx = zmq.asyncio.Context()
    watch = MasterWatch(ctx, "tcp://127.0.0.1:9", "m1")
    try:
        watch.answered(5_000)                     # our session began at 5,000 ms (master clock)
        older = seal_announcement(master, announcement(started=4_000, boot=b"o" * 16))
        assert watch.restarted(older, master.public_raw, 0) is None        # the run we talk to
        new = seal_announcement(master, announcement(started=6_000, boot=b"n" * 16))
        assert watch.restarted(new, None, 0) is None                       # no trusted key yet
        assert watch.restarted(new, master.public_raw, 0) is not None      # a restart
        assert watch.restarted(new, master.public_raw, 0) is None          # acted on once
        again = seal_announcement(master, announcement(started=6_000, boot=b"n" * 16))
        assert watch.restarted(again, master.public_raw, 0) is None        # a later copy of that boot
        forged = seal_announcement(Identity.generate(), announcement(started=9_000, boot=b"f" * 16))
        assert watch.restarted(forged, master.public_raw, 0) is None and watch.refused == 1
    finally:
        watch.close()
        ctx.destroy(linger=0)


def test_copies_of_a_boot_acted_on_are_not_verified_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every announcement the publisher sends while minions reconnect reaches every minion: one
    that names a boot the minion acted on already, or a start before its master last answered,
    is ignored before its signature is checked (a forged one could do no more than a lost one)."""
    import runtime.minion.watch as watch_mod

    master = Identity.generate()
    verified: list[bytes] = []
    real_open = watch_mod.open_announcement

    def counting_open(master_pub: bytes, data: bytes, **kwargs: int) -> Announcement:
        verified.append(data)
        return real_open(master_pub, data, **kwargs)

    monkeypatch.setattr(watch_mod, "open_announcement", counting_open)
    ctx = zmq.asyncio.Context()
    watch = MasterWatch(ctx, "tcp://127.0.0.1:9", "m1")
    try:
        watch.answered(5_000)
        first = seal_announcement(master, announcement(started=6_000, boot=b"n" * 16))
        assert watch.restarted(first, master.public_raw, 0) is not None and len(verified) == 1
        copies = [seal_announcement(master, announcement(started=6_000, boot=b"n" * 16)) for _ in range(5)]
        assert all(watch.restarted(c, master.public_raw, 0) is None for c in copies) and len(verified) == 1
        watch.answered(7_000)                      # re-authenticated with that boot at 7,000
        older = seal_announcement(master, announcement(started=6_500, boot=b"x" * 16))
        assert watch.restarted(older, master.public_raw, 0) is None and len(verified) == 1
        # a forgery naming a new boot is still verified, and refused
        forged = seal_announcement(Identity.generate(), announcement(started=9_000, boot=b"f" * 16))
        assert watch.restarted(forged, master.public_raw, 0) is None and len(verified) == 2 and watch.refused == 1
        assert watch.restarted(b"\xc1junk", master.public_raw, 0) is None and watch.refused == 2
    finally:
        watch.close()
        ctx.destroy(linger=0)


def test_peek_reads_the_claims_without_trusting_them() -> None:
    sealed = seal_announcement(Identity.generate(), announcement(started=6_000, boot=b"p" * 16))
    assert peek_announcement(sealed) == (b"p" * 16, 6_000)
    assert peek_announcement(b"") is None
    assert peek_announcement(codec.pack({"a": b"\x01", "sig": b""})) is None
    assert peek_announcement(codec.pack({"a": codec.pack({"boot": "text", "started": 1})})) is None


def test_announcer_paces_announcements_and_counts_the_fleet(tmp_path) -> None:
    master = Identity.generate()
    clock = [100.0]
    announcer = Announcer(master, 1_234, 800.0, lambda: 7, clock=lambda: clock[0])
    first = announcer.take()
    assert first is not None
    got = open_announcement(master.public_raw, first)
    assert (got.started_ms, got.fleet, got.rate, got.boot) == (1_234, 7, 800.0, announcer.boot)
    assert announcer.take() is None and announcer.wait_ms() is None      # nothing due
    for _ in range(1000):                                                # a thousand new minions subscribe
        announcer.note_subscription(b"\x01master")
        announcer.note_subscription(b"\x01" + hint_topic(1_234))       # (or answered by this run)
    assert announcer.subscribers == 1000
    assert announcer.wait_ms() is None                                   # no one's session was lost
    for _ in range(1000):                                                # a thousand minions resubscribe
        announcer.note_subscription(b"\x01" + hint_topic(1_233))       # whose session was of an earlier run
    assert announcer.take() is None                                      # within MIN_GAP_S of the last one
    assert announcer.wait_ms() == round(MIN_GAP_S * 1000)
    clock[0] += 2 * MIN_GAP_S
    assert announcer.take() is not None and announcer.take() is None    # one for all of them
    announcer.note_subscription(b"\x01all")                              # job topics do not count
    announcer.note_subscription(b"\x00master")                           # nor unsubscriptions
    announcer.note_subscription(b"\x00" + hint_topic(1))
    announcer.note_subscription(b"\x01" + hint_topic(1)[:-1])          # nor a malformed hint
    clock[0] += 1
    assert announcer.take() is None
    assert hinted_ms(hint_topic(2**40)) == 2**40 and hinted_ms(b"master") is None
    (tmp_path / "minions").mkdir()
    for name in ("a", "b", ".tmp-x"):
        (tmp_path / "minions" / name).write_text("k")
    assert count_accepted(str(tmp_path)) == 2
    assert count_accepted(str(tmp_path / "missing")) == 0


def test_many_subscribers_get_announcements_further_apart() -> None:
    clock = [100.0]
    announcer = Announcer(Identity.generate(), 1_234, 800.0, lambda: 0, clock=lambda: clock[0])
    assert announcer.take() is not None
    sent = copies = 0
    for _ in range(200):                                 # ten seconds of subscribers arriving, 50 each 50 ms
        for _ in range(50):
            announcer.note_subscription(b"\x01master")
            announcer.note_subscription(b"\x01" + hint_topic(1_000))   # sessions of an earlier run
        announcer.note_subscription(b"\x01all")        # job topics are not counted
        clock[0] += MIN_GAP_S
        if announcer.take() is not None:
            sent += 1
            copies += announcer.subscribers
    assert announcer.subscribers == 10_000
    assert announcer.gap() == 10_000 / COPIES_PER_S
    assert sent >= 10 / MAX_GAP_S, sent                  # still one at least every MAX_GAP_S
    assert copies <= 10 * COPIES_PER_S, copies           # 1,000,000 copies with a fixed MIN_GAP_S
    for _ in range(9_990):                               # their connections close
        announcer.note_subscription(b"\x00master")
    assert announcer.subscribers == 10 and announcer.gap() == MIN_GAP_S
    for _ in range(20):
        announcer.note_subscription(b"\x00master")
    assert announcer.subscribers == 0
    announcer.subscribers = 10**9
    assert announcer.gap() == MAX_GAP_S


def test_the_publishers_socket_counts_subscribers_that_come_and_go() -> None:
    """On the Publisher's real socket: each subscriber's subscription arrives, and its
    unsubscription when its connection closes, so the announcer's count follows the subscribers."""
    ctx = zmq.Context()
    pub = publisher_socket(ctx)
    subs: list[zmq.Socket] = []
    try:
        port = pub.bind_to_random_port("tcp://127.0.0.1")
        announcer = Announcer(Identity.generate(), 1_234, 800.0, lambda: 0)

        def drain(until: int) -> None:
            deadline = time.monotonic() + 10
            while announcer.subscribers != until and time.monotonic() < deadline:
                if pub.poll(100):
                    announcer.note_subscription(pub.recv())

        for _ in range(3):
            sub = ctx.socket(zmq.SUB)
            sub.setsockopt(zmq.SUBSCRIBE, ANNOUNCE_TOPIC)
            sub.setsockopt(zmq.SUBSCRIBE, b"all")
            sub.connect(f"tcp://127.0.0.1:{port}")
            subs.append(sub)
        drain(3)
        assert announcer.subscribers == 3
        subs.pop().close(linger=0)
        drain(2)
        assert announcer.subscribers == 2
    finally:
        for sub in subs:
            sub.close(linger=0)
        pub.close(linger=0)
        ctx.term()


def test_admission_rate_follows_workers_and_config() -> None:
    assert admission_rate({"reauth_rate": 123}) == 123.0
    one_worker = admission_rate({"worker_threads": 1})
    assert one_worker == 400.0
    assert admission_rate({"worker_threads": 64}) >= one_worker
    assert admission_rate({"worker_threads": 64, "clear_rate_global": 50}) == 50.0


def test_a_restarted_publisher_announces_for_minions_of_its_earlier_run_only() -> None:
    """Real sockets on 127.0.0.1: a minion's subscriber (``MasterWatch``) that had a session with
    the first run of a master makes an announcement due on the second run's Publisher when it
    reconnects; a new minion's subscriber, and one answered by the second run, make none."""
    from runtime.minion.watch import MasterWatch

    async def main() -> None:
        ctx = zmq.asyncio.Context()
        plain = zmq.Context()
        pub = publisher_socket(plain)
        port = pub.bind_to_random_port("tcp://127.0.0.1")
        address = f"tcp://127.0.0.1:{port}"
        old = MasterWatch(ctx, address, "old")
        new: MasterWatch | None = None
        # as a minion does at all times: its loop reads the subscriber (which is also what makes
        # ZeroMQ attach a reconnected connection and send the subscriptions again)
        heard: asyncio.Queue[tuple[bytes, bytes] | None] = asyncio.Queue()

        async def listen(watch: MasterWatch) -> None:
            while True:
                message = await watch.recv()
                if watch is old:
                    await heard.put(message)

        async def drain(announcer: Announcer, until_subscribers: int) -> None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                while pub.poll(0):
                    announcer.note_subscription(pub.recv())
                if announcer.subscribers >= until_subscribers:
                    await asyncio.sleep(0.2)             # and whatever the subscribers send after
                    while pub.poll(0):
                        announcer.note_subscription(pub.recv())
                    return
                await asyncio.sleep(0.02)
            raise AssertionError(f"{announcer.subscribers} subscribers, {until_subscribers} expected")

        readers = [asyncio.create_task(listen(old))]
        try:
            first_run = Announcer(Identity.generate(), 1_000, 800.0, lambda: 2)
            assert first_run.take() is not None                           # the one at start
            await drain(first_run, 1)
            old.answered(5_000)                                           # a session with the first run
            await drain(first_run, 1)
            assert first_run.wait_ms() is None                            # nothing due: it is this run's
            pub.close(linger=0)                                           # the master dies ...
            pub = publisher_socket(plain)
            for _ in range(100):                                          # ... and starts again (once
                try:                                                      # libzmq has let the port go)
                    pub.bind(address)
                    break
                except zmq.ZMQError:
                    await asyncio.sleep(0.05)
            second_run = Announcer(Identity.generate(), 9_000, 800.0, lambda: 2)
            second_run.take()
            new = MasterWatch(ctx, address, "new")                        # a minion never answered
            readers.append(asyncio.create_task(listen(new)))
            await drain(second_run, 2)
            assert second_run.wait_ms() is not None                       # the old minion's hint: due
            announcement = second_run.take()
            assert announcement is not None
            pub.send_multipart([ANNOUNCE_TOPIC, announcement])
            got = await asyncio.wait_for(heard.get(), 5)
            assert got is not None and got[0] == ANNOUNCE_TOPIC
            assert old.restarted(got[1], second_run.identity.public_raw, 0) is not None
            old.answered(9_500)                                           # it authenticated again
            new.answered(9_600)
            await asyncio.sleep(0.3)
            while pub.poll(0):
                second_run.note_subscription(pub.recv())
            assert second_run.wait_ms() is None                           # answered by this run: none
        finally:
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
            old.close()
            if new is not None:
                new.close()
            pub.close(linger=0)
            ctx.term()
            plain.term()

    asyncio.run(main())
