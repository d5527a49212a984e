"""Jobs running on a minion: saltutil.running / find_job / kill_job, and de-duplication."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunningJob:
    jid: str
    fun: str
    arg: list
    tgt: Any
    tgt_type: str
    user: str
    started: float = field(default_factory=time.time)
    pid: int | None = None  # a job process (multiprocessing: True)
    thread: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"jid": self.jid, "fun": self.fun, "arg": self.arg, "tgt": self.tgt, "tgt_type": self.tgt_type,
                "user": self.user, "pid": self.pid or os.getpid(), "started": self.started}


class JobRegistry:
    """Thread-safe table of running jobs plus a bounded memory of jids already seen."""

    def __init__(self, remember: int = 10000):
        self._lock = threading.Lock()
        self._running: dict[str, RunningJob] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._remember = remember

    def first_time(self, jid: str) -> bool:
        """True the first time a jid is seen (a replayed or duplicated publication is dropped)."""
        with self._lock:
            if jid in self._seen:
                return False
            self._seen[jid] = None
            while len(self._seen) > self._remember:
                self._seen.popitem(last=False)
            return True

    def add(self, job: RunningJob) -> None:
        with self._lock:
            self._running[job.jid] = job

    def set_pid(self, jid: str, pid: int) -> None:
        with self._lock:
            if jid in self._running:
                self._running[jid].pid = pid

    def done(self, jid: str) -> None:
        with self._lock:
            self._running.pop(jid, None)

    def running(self) -> list[dict[str, Any]]:
        with self._lock:
            return [job.describe() for job in self._running.values()]

    def find(self, jid: str) -> dict[str, Any]:
        with self._lock:
            job = self._running.get(jid)
            return job.describe() if job else {}

    def kill(self, jid: str) -> str | None:
        with self._lock:
            job = self._running.get(jid)
        if job is None:
            return None
        if job.pid and job.pid != os.getpid():
            try:
                os.kill(job.pid, signal.SIGKILL)
                return f"Signal 9 sent to job {jid} at pid {job.pid}"
            except ProcessLookupError:
                return None
        return f"Job {jid} runs in a thread and cannot be killed (set multiprocessing: True)"
