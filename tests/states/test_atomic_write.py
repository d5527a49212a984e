"""A process killed while file.managed writes leaves the old file intact, and no temp file as the target.

The child process applies file.managed with a large content. It is SIGKILLed at two
moments: in the middle of writing the data, and after all data is written and synced
but before the rename. A hook in the child (a wrapped ``os.write`` / ``os.fsync``) tells
the parent when that moment is reached and then blocks, so the kill lands exactly there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from statehelpers import read, write

from runtime.states import _files as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from runtime.states import StateContext, _files
    from runtime.states import file as file_state

    target, moment = sys.argv[1], sys.argv[2]
    real_write, real_fsync = os.write, os.fsync
    state = {{"written": 0}}

    def announce_and_block():
        sys.stdout.write("at-moment\\n")
        sys.stdout.flush()
        time.sleep(60)

    def slow_write(fd, data):
        # write in 256 KiB pieces; announce half-way through the new content
        if len(data) > (256 << 10):
            data = data[: 256 << 10]
        n = real_write(fd, data)
        state["written"] += n
        if moment == "mid-write" and state["written"] >= 4 << 20:
            announce_and_block()
        return n

    def fsync_then_block(fd):
        real_fsync(fd)
        if moment == "before-rename":
            announce_and_block()

    _files.os.write = slow_write
    _files.os.fsync = fsync_then_block
    content = ("x" * 1023 + "\\n") * 8192  # 8 MiB
    ret = file_state.managed(StateContext(), target, contents=content)
    print("finished", ret["result"])
""")


@pytest.mark.parametrize("moment", ["mid-write", "before-rename"])
def test_sigkill_during_file_managed_keeps_old_file(sandbox, moment):
    target = write(os.path.join(sandbox, "big.conf"), "old content\n", mode=0o640)
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT), target, moment],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.strip() == "at-moment", child.stderr.read()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    assert read(target) == "old content\n"
    assert os.stat(target).st_mode & 0o777 == 0o640
    leftovers = [n for n in os.listdir(sandbox) if n != "big.conf"]
    # with O_TMPFILE the unwritten inode vanishes with the process; where the kernel
    # cannot link an O_TMPFILE inode a hidden named temp may remain, never the target
    assert all(n.startswith(F.TEMP_PREFIX) for n in leftovers), leftovers


def test_atomic_write_replaces_with_mode_and_owner_set_before_rename(sandbox):
    target = write(os.path.join(sandbox, "f"), "old")
    F.atomic_write(target, b"new", 0o600, os.getuid(), os.getgid())
    assert read(target) == "new" and os.stat(target).st_mode & 0o777 == 0o600
    assert os.listdir(sandbox) == ["f"]


def test_atomic_write_failure_leaves_target_and_no_temp(sandbox, monkeypatch):
    target = write(os.path.join(sandbox, "f"), "old")

    def broken_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(F.os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        F.atomic_write(target, b"new", 0o644)
    assert read(target) == "old"
    assert os.listdir(sandbox) == ["f"]
