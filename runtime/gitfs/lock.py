"""A lock file held with flock(2): one fetch of a repository at a time, across processes and threads.

The master's workers and a ``saltpan compile --fetch`` started beside them share one
cache directory.  ``flock`` locks belong to an open file description, so two
threads of one process exclude each other too, and the kernel drops the lock of
a process that dies: there is never a stale lock to clean up (Salt's pid files
need ``cache.clear_git_lock`` after a crash).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator


class LockTimeout(Exception):
    """Another process held the lock for longer than we were willing to wait."""


@contextlib.contextmanager
def held(path: str, timeout: float, poll: float = 0.05) -> Iterator[bool]:
    """Hold the exclusive lock on path; yields True when we had to wait for another holder first.

    Raises LockTimeout when the lock is still held by someone else after timeout seconds.
    """
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    waited = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = True
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{path} is held by another process (waited {timeout:g} s)") from None
                time.sleep(poll)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # the pid is for people looking at the file; the lock does not depend on it
        yield waited
    finally:
        os.close(fd)  # closing the descriptor releases the lock
