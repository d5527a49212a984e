"""A swarm's minions start a few dozen at a time, with the loop's other work between them
(runtime/minion/swarm.py): each minion runs to its first hello before anything else happens on the
loop, and started all in one go, the first replies waited for thousands of hellos to be signed and
sent, past ``auth_timeout`` for some (1,300-2,900 unanswered hellos in a 10,000-minion launch)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from runtime import config
from runtime.minion import swarm


class _FakeMinion:
    """Counts the minions started (their coroutines made) when each one first runs."""

    created = 0

    def __init__(self, index: int, seen: dict[int, int], served: list[int]) -> None:
        self.id = f"fake-{index:04d}"
        self.index = index
        self.seen = seen
        self.served = served

    def run(self, stop: asyncio.Event) -> Coroutine[Any, Any, None]:
        _FakeMinion.created += 1

        async def body() -> None:
            self.seen[self.index] = _FakeMinion.created
            if self.index == 0:      # its hello is answered: the reply is read when the loop gets to it
                asyncio.get_running_loop().call_soon(lambda: self.served.append(_FakeMinion.created))
            await stop.wait()

        return body()


def test_minions_start_in_batches_with_the_loop_served_between(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path) -> None:
    seen: dict[int, int] = {}
    served: list[int] = []          # a reply arriving meanwhile: when it was handled
    _FakeMinion.created = 0
    monkeypatch.setattr(swarm, "build_minions",
                        lambda opts, indexes, *rest, **kw: [_FakeMinion(i, seen, served) for i in indexes])
    opts = config.load(None, "minion", {"pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache")})

    async def main() -> None:
        stop = asyncio.Event()
        ready = asyncio.Event()
        running = asyncio.create_task(swarm.run_swarm(opts, 500, "fake-", stop, ready))
        await asyncio.wait_for(ready.wait(), 10)
        stop.set()
        await asyncio.wait_for(running, 10)

    asyncio.run(main())
    assert len(seen) == 500
    assert seen[0] <= 50                  # the first minion ran before the 51st was made
    assert served and served[0] <= 100    # and its reply was read before the 101st was made
    assert max(seen.values()) == 500
