"""A job return is never lost when the minion's master dies under it (issue 21, failover): the
session closing ends the waiting request with RequestClosed, and the return is kept for the next
session, or sent through the new one at once when the minion has moved to another master already."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime import protocol
from runtime.crypt.errors import RemoteRefusal
from runtime.crypt.identity import Identity
from runtime.minion.daemon import Minion
from runtime.transport_async import RequestClosed


class RecordingSession:
    """Stands for a session's request channel: records what it delivers, or fails as told."""

    def __init__(self, fail: BaseException | None = None, before_failing: asyncio.Event | None = None) -> None:
        self.delivered: list[Any] = []
        self.fail = fail
        self.before_failing = before_failing

    async def request(self, message: Any, timeout: float | None = None, tries: int | None = None) -> Any:
        if self.fail is not None:
            if self.before_failing is not None:
                await self.before_failing.wait()
            raise self.fail
        self.delivered.append(message)
        return None


@pytest.fixture
def minion(tmp_path: Path) -> Minion:
    opts = {"id": "bm1", "pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"),
            "refusal_log_interval": 60, "master": ["127.0.0.3", "127.0.0.2"], "master_type": "failover"}
    return Minion(opts, identity=Identity.generate(), grains={"id": "bm1"}, quiet=True)


def ret(jid: str = "20990101000000000001") -> protocol.JobReturn:
    return protocol.JobReturn(jid=jid, fun="test.sleep", fun_args=["3"], ret=True, retcode=0, success=True)


def test_a_return_cut_off_by_the_session_closing_is_kept(minion: Minion) -> None:
    async def main() -> None:
        minion.session = RecordingSession(RequestClosed("closed"))  # type: ignore[assignment]
        await minion.send_return(ret())

    asyncio.run(main())
    assert [r.jid for r in minion.pending_returns] == ["20990101000000000001"]


def test_a_return_goes_through_the_master_the_minion_moved_to(minion: Minion) -> None:
    async def main() -> RecordingSession:
        gone = asyncio.Event()
        minion.session = RecordingSession(RequestClosed("closed"), before_failing=gone)  # type: ignore[assignment]
        sending = asyncio.create_task(minion.send_return(ret()))
        await asyncio.sleep(0)
        new = RecordingSession()
        minion.session = new  # type: ignore[assignment]   # failed over while the return waited
        gone.set()
        await sending
        return new

    new = asyncio.run(main())
    assert [r.jid for r in new.delivered] == ["20990101000000000001"]
    assert not minion.pending_returns


def test_no_session_keeps_the_return(minion: Minion) -> None:
    asyncio.run(minion.send_return(ret()))
    assert len(minion.pending_returns) == 1


class RefusingSession(RecordingSession):
    """Delivers everything but the returns of ``refuse`` (jid -> the master's refusal reason)."""

    def __init__(self, refuse: dict[str, str]) -> None:
        super().__init__()
        self.refuse = refuse

    async def request(self, message: Any, timeout: float | None = None, tries: int | None = None) -> Any:
        if isinstance(message, protocol.JobReturn) and message.jid in self.refuse:
            raise RemoteRefusal(f"refused {message.jid}", self.refuse[message.jid])
        return await super().request(message, timeout, tries)


def _registered_again(minion: Minion, session: RecordingSession) -> None:
    minion.started, minion.pillar = True, {"role": "web"}   # a rebuilt session: grains only, then returns
    asyncio.run(minion.on_registered(session))  # type: ignore[arg-type]


def test_a_kept_return_the_master_already_has_is_dropped_not_resent_forever(minion: Minion) -> None:
    """The master stored the return but its reply was lost as it died: the next session's resend
    is refused ``duplicate``; the return is dropped and the session goes on (it used to fail every
    new session, and the minion never answered again)."""
    minion.pending_returns.extend([ret("20990101000000000001"), ret("20990101000000000002")])
    session = RefusingSession({"20990101000000000001": "duplicate"})
    _registered_again(minion, session)
    assert [getattr(m, "jid", None) for m in session.delivered][-1] == "20990101000000000002"
    assert not minion.pending_returns


@pytest.mark.parametrize("reason", ["busy", "store_unavailable", "internal_error"])
def test_a_kept_return_refused_for_now_stays_kept_and_the_session_goes_on(minion: Minion, reason: str) -> None:
    """It used to fail the new session (a traceback, and the same at every session after)."""
    minion.pending_returns.extend([ret("20990101000000000001"), ret("20990101000000000002")])
    session = RefusingSession({"20990101000000000001": reason})
    _registered_again(minion, session)
    assert [r.jid for r in minion.pending_returns] == ["20990101000000000001", "20990101000000000002"]
    assert not [m for m in session.delivered if isinstance(m, protocol.JobReturn)]


def test_a_kept_return_the_master_cannot_decode_is_dropped(minion: Minion) -> None:
    minion.pending_returns.extend([ret("20990101000000000001"), ret("20990101000000000002")])
    session = RefusingSession({"20990101000000000001": "too_deep"})
    _registered_again(minion, session)
    assert [m.jid for m in session.delivered if isinstance(m, protocol.JobReturn)] == ["20990101000000000002"]
    assert not minion.pending_returns


def test_kept_returns_follow_the_next_return_delivered(minion: Minion) -> None:
    """A return kept while the master refused it for now goes as soon as the master takes returns
    again, not only at the next session."""
    minion.pending_returns.append(ret("20990101000000000001"))
    session = RecordingSession()
    minion.session = session  # type: ignore[assignment]
    asyncio.run(minion.send_return(ret("20990101000000000002")))
    assert [m.jid for m in session.delivered] == ["20990101000000000002", "20990101000000000001"]
    assert not minion.pending_returns


class BusyThenTaking(RecordingSession):
    """Refuses the first ``busy`` tries of every return as the master's full queue does, then takes it."""

    def __init__(self, busy: int, reason: str = "busy") -> None:
        super().__init__()
        self.busy, self.reason, self.tries = busy, reason, 0

    async def request(self, message: Any, timeout: float | None = None, tries: int | None = None) -> Any:
        self.tries += 1
        if self.tries <= self.busy:
            raise RemoteRefusal("the master is busy", self.reason)
        return await super().request(message, timeout, tries)


@pytest.mark.parametrize("reason", ["busy", "rate_limited"])
def test_a_return_refused_busy_is_sent_again_through_the_same_session(minion: Minion, reason: str) -> None:
    """It used to be dropped: under overload the job cache never got it."""
    minion.opts.update(return_retry_timer=0.01, return_retry_timer_max=0.02)
    session = BusyThenTaking(3, reason)
    minion.session = session  # type: ignore[assignment]
    asyncio.run(minion.send_return(ret()))
    assert [r.jid for r in session.delivered] == ["20990101000000000001"]
    assert session.tries == 4
    assert not minion.pending_returns


def test_a_return_refused_busy_until_the_session_ends_is_kept_for_the_next(minion: Minion) -> None:
    minion.opts.update(return_retry_timer=0.01, return_retry_timer_max=0.01)

    async def main() -> None:
        session = BusyThenTaking(10**6)
        minion.session = session  # type: ignore[assignment]
        sending = asyncio.create_task(minion.send_return(ret()))
        await asyncio.sleep(0.05)
        minion.session = None    # the heartbeat gave the busy master up
        await asyncio.wait_for(sending, 1)

    asyncio.run(main())
    assert [r.jid for r in minion.pending_returns] == ["20990101000000000001"]


def test_a_return_refused_busy_goes_through_the_master_the_minion_moved_to(minion: Minion) -> None:
    minion.opts.update(return_retry_timer=0.01, return_retry_timer_max=0.01)

    async def main() -> RecordingSession:
        minion.session = BusyThenTaking(10**6)  # type: ignore[assignment]
        sending = asyncio.create_task(minion.send_return(ret()))
        await asyncio.sleep(0.03)
        new = RecordingSession()
        minion.session = new  # type: ignore[assignment]
        await asyncio.wait_for(sending, 1)
        return new

    new = asyncio.run(main())
    assert [r.jid for r in new.delivered] == ["20990101000000000001"]
    assert not minion.pending_returns


def test_a_return_refused_while_the_store_is_unreachable_is_kept_not_dropped(minion: Minion) -> None:
    minion.session = BusyThenTaking(1, "store_unavailable")  # type: ignore[assignment]
    asyncio.run(minion.send_return(ret()))
    assert [r.jid for r in minion.pending_returns] == ["20990101000000000001"]


@pytest.mark.parametrize("reason", ["too_deep", "too_long", "malformed", "ext_type", "duplicate"])
def test_a_return_no_resend_can_change_is_dropped(minion: Minion, reason: str) -> None:
    minion.session = BusyThenTaking(1, reason)  # type: ignore[assignment]
    asyncio.run(minion.send_return(ret()))
    assert not minion.pending_returns


def test_a_return_the_master_has_already_is_dropped(minion: Minion) -> None:
    minion.session = RefusingSession({"20990101000000000001": "duplicate"})  # type: ignore[assignment]
    asyncio.run(minion.send_return(ret()))
    assert not minion.pending_returns
