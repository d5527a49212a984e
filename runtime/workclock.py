"""A worker's time on its requests, less the time it spent waiting for a CPU.

The request proxy hands a worker several minions' requests at once while about ``BATCH_WORK_S`` of
their recent work fits (``runtime.transport_proxy``).  Measured as wall time, that work grows with
every other process runnable on the same cores: on a machine whose cores are shared by more
workers than it has (several masters on one host, or a busy one), a request that needs 2 ms of a
CPU takes 6 ms of wall time, the batches shrink to a third, and what batching saves (one store
read and one commit for a handful of requests) is lost just when the CPU is scarce.

Linux counts, per thread, the time it spent runnable but not running (``/proc/thread-self/schedstat``,
its second field, in ns).  Wall time less that is the request's own time: its CPU time and its
waits for I/O (a store's reply, a slow disk), which batching must still count, since a batch of
requests each waiting a second for an unreachable database would make the last one wait for all.
Where the file cannot be read (another kernel, schedstats off), the wait counts as none: the work
is the wall time, as before.
"""

from __future__ import annotations

import io
import threading
import time

SCHEDSTAT = "/proc/thread-self/schedstat"


class WorkClock:
    """Stamps of (wall ns, ns this thread waited for a CPU), and the work between two of them.
    Each thread reads its own counter: the file is opened again when another thread asks."""

    def __init__(self, path: str = SCHEDSTAT) -> None:
        self.path = path
        self._file: io.FileIO | None = None
        self._thread: int | None = None

    def _waited_ns(self) -> int:
        thread = threading.get_ident()
        if self._thread != thread:
            self.close()
            self._thread = thread
            try:
                self._file = io.FileIO(self.path, "r")    # kept open: one read per stamp
            except OSError:
                self._file = None
        handle = self._file
        if handle is None:
            return 0
        try:
            handle.seek(0)
            fields = (handle.read(128) or b"").split()
            return int(fields[1])
        except (OSError, ValueError, IndexError):
            self.close()                # not opened again in this thread: counted as no wait
            return 0

    def stamp(self) -> tuple[int, int]:
        return time.perf_counter_ns(), self._waited_ns()

    def work_since(self, start: tuple[int, int]) -> float:
        """Seconds since ``start`` (a :meth:`stamp`) not spent waiting for a CPU (never below 0)."""
        wall, waited = self.stamp()
        return max(0, (wall - start[0]) - (waited - start[1])) / 1e9

    def close(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            handle.close()
