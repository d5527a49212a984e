"""Run a job in a forked process (``multiprocessing: True``) so that kill_job can stop it.

The child never touches the session (that would reuse nonce counters): whatever it
needs from the master goes through a pipe to the parent thread, which asks the
master and passes the answer back.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any


def _child(minion: Any, job: dict[str, Any], conn: Any) -> None:
    def via_parent(payload: dict[str, Any], timeout: float | None = None) -> Any:
        conn.send(("call", payload))
        kind, value = conn.recv()
        if kind == "error":
            from runtime.modules import CommandError

            raise CommandError(value)
        return value

    def fire_via_parent(tag: str, data: dict[str, Any], wait: float | None = None) -> bool:
        conn.send(("fire", (tag, data, wait)))
        kind, value = conn.recv()
        return bool(value) if kind == "reply" else False

    minion.call_master = via_parent
    minion.fire_local = fire_via_parent  # the local bus runs in the parent's event loop
    try:
        result = minion.execute(job)
    except BaseException as exc:  # noqa: BLE001
        result = (f"The minion function caused an exception: {exc}", 1, False)
    conn.send(("result", result))


def run_forked(minion: Any, job: dict[str, Any]) -> tuple[Any, int, bool]:
    parent, child = multiprocessing.Pipe()
    pid = os.fork()
    if pid == 0:  # the child: no return from here
        code = 0
        try:
            parent.close()
            _child(minion, job, child)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    child.close()
    minion.jobs.set_pid(job["jid"], pid)
    try:
        while True:
            if not parent.poll(0.5):
                done, _status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return f"The job process {pid} ended without a result (killed?)", 1, False
                continue
            try:
                kind, value = parent.recv()
            except EOFError:
                os.waitpid(pid, 0)
                return f"The job process {pid} ended without a result (killed?)", 1, False
            if kind == "call":
                try:
                    parent.send(("reply", minion.call_master(value)))
                except Exception as exc:  # noqa: BLE001
                    parent.send(("error", str(exc)))
            elif kind == "fire":
                tag, data, wait = value
                parent.send(("reply", minion.fire_local(tag, data, wait)))
            elif kind == "result":
                os.waitpid(pid, 0)
                return value
    finally:
        parent.close()
