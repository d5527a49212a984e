"""How long a minion whose hello was refused ``busy`` should stay away: the request proxy's hint.

A storm of new minions (10,000 launched at once, or a fleet coming back) sends hellos far faster
than the workers admit them.  A minion told only ``busy`` came back within a second or so, and each
return cost a new connection and a signed hello on both sides: 45,000 refusals for 10,000 minions,
most of the load generator's CPU in a storm.  So a refusal of a hello carries ``retry_s``: the
minions turned away recently (by address) over the hellos admitted per second recently, the time
the workers need to admit them all.  A minion comes back at a random time within it, so returning
minions arrive at about the rate they are admitted.

The hint is unsigned, as the refusal is: a forged one only makes a minion wait, at most
``MAX_RETRY_S`` (a dropped reply does as much).
"""

from __future__ import annotations

from collections import OrderedDict, deque

MIN_RETRY_S = 1.0
MAX_RETRY_S = 60.0
RATE_WINDOW_S = 5.0          # admissions counted over this long for the rate
FORGET_S = 2 * MAX_RETRY_S   # a refused address not seen again for this long is not counted
MAX_TRACKED = 200_000        # refused addresses remembered at most (the oldest go first)


class HelloBacklog:
    """Addresses refused a hello recently, and hellos admitted per second."""

    def __init__(self, rate_floor: float = 100.0) -> None:
        self.rate_floor = rate_floor          # hellos/s assumed when fewer were admitted lately
        self._refused: OrderedDict[bytes, float] = OrderedDict()  # address -> last refusal, oldest first
        self._admitted: deque[float] = deque()

    def refused(self, peer: bytes, now: float) -> None:
        self._refused[peer] = now
        self._refused.move_to_end(peer)       # ordered by last refusal
        if len(self._refused) > MAX_TRACKED:
            self._refused.popitem(last=False)

    def admitted(self, peer: bytes, now: float) -> None:
        """A hello of ``peer`` was handed to a worker."""
        self._refused.pop(peer, None)
        self._admitted.append(now)

    def rate(self, now: float) -> float:
        """Hellos admitted per second over the last ``RATE_WINDOW_S`` (at least ``rate_floor``)."""
        while self._admitted and self._admitted[0] < now - RATE_WINDOW_S:
            self._admitted.popleft()
        return max(self.rate_floor, len(self._admitted) / RATE_WINDOW_S)

    def waiting(self, now: float) -> int:
        """Addresses refused within ``FORGET_S`` and not admitted since."""
        while self._refused:
            peer, when = next(iter(self._refused.items()))     # the oldest refusal
            if when >= now - FORGET_S:
                break
            del self._refused[peer]
        return len(self._refused)

    def retry_s(self, now: float) -> float:
        """The window a refused minion should come back within (whole seconds)."""
        window = self.waiting(now) / self.rate(now)
        return float(min(MAX_RETRY_S, max(MIN_RETRY_S, round(window))))
