"""The honest minion's side of an attack: how long each of its requests takes, one at a time.

``test.ping`` through the master (the guard's ping loop) measures a whole round trip: the
operator's publish, the publication, the minion's return.  :class:`HonestProbe` measures what one
accepted minion asks the master for, request by request, while the master is under the attack's
load: a heartbeat, a file hash and its pillar, in turn, each sealed under its own session and
sent only when the previous one was answered (as a minion's own tasks do).  A request not
answered within ``timeout`` counts as failed with that latency.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from runtime.crypt.errors import CryptoError, RemoteRefusal
from runtime.transport import RequestTimeout
from tests.integration.rogue import Rogue

REQUESTS = ({"cmd": "_heartbeat", "epoch": 0}, {"cmd": "_file_hash", "path": "hello.txt"}, {"cmd": "_pillar"})


@dataclass
class ProbeResult:
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    def summary(self) -> str:
        return (f"{len(self.latencies)} honest requests, p50 {self.percentile(50):.3f} s, p95 "
                f"{self.percentile(95):.3f} s, max {max(self.latencies, default=float('nan')):.3f} s, "
                f"{len(self.failures)} failed")


class HonestProbe:
    """A loop of honest requests from ``rogue`` (an accepted minion driven by hand)."""

    def __init__(self, minion: Rogue, timeout: float = 5.0, pause: float = 0.05) -> None:
        self.minion = minion
        self.timeout = timeout
        self.pause = pause
        self.result = ProbeResult()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def one(self, payload: dict) -> tuple[bool, float, str]:
        started = time.monotonic()
        try:
            counter, body = self.minion.sealed(payload)
            reply = self.minion.client.request(body, timeout=self.timeout, tries=1)
            answer = self.minion.channel.open_reply(counter, reply)
        except RemoteRefusal as exc:
            if exc.reason == "unknown_session":       # the master expired an idle session: not the attack's doing
                self.minion.auth()
                return self.one(payload)
            return False, time.monotonic() - started, f"{payload['cmd']}: {exc.reason}"
        except (RequestTimeout, CryptoError) as exc:
            return False, time.monotonic() - started, f"{payload['cmd']}: {exc}"
        took = time.monotonic() - started
        if isinstance(answer, dict) and "error" in answer:
            return False, took, f"{payload['cmd']}: {answer['error']}"
        return True, took, ""

    def _loop(self) -> None:
        n = 0
        while not self._stop.is_set():
            payload = REQUESTS[n % len(REQUESTS)]
            n += 1
            ok, took, detail = self.one(payload)
            self.result.latencies.append(took)
            if not ok:
                self.result.failures.append(detail)
            self._stop.wait(self.pause)

    def start(self) -> HonestProbe:
        self.result = ProbeResult()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> ProbeResult:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 5)
        return self.result
