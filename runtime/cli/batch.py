"""`saltpan run --batch N|P%`: Salt's batch runs (``salt -b``).

As ``salt.cli.batch`` does: the target is pinged first (minions that do not answer get no job and
are named); the batch size is N, or P percent of the minions that answered (below 1 rounds up to
1, above rounds down); a window of that many minions runs at once, and each minion that returns
(or times out) frees its place for the next, after ``--batch-wait`` seconds.  With ``--failhard``
no minion is started once one returned a non-zero retcode.  Each start is one job published to a
list target, so ``salt/job/<jid>/new`` names the minions started together (Salt 3008 reuses one
jid for all of a batch's jobs; saltpan's master gives each its own).

Exit status, as salt's batch mode: the highest retcode a minion returned; 1 at least when a
targeted minion did not answer the ping or did not return, or --failhard left some out (salt
counts those as 0; with --hide-timeout saltpan does too).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.cli.job_output import ReturnPrinter
    from runtime.client import LocalClient
    from runtime.events import EventListener

_SPEC = re.compile(r"^(\d+)(%?)$|^(\d*\.\d+)%$")


def batch_spec(text: str) -> str:
    """The --batch value: a whole number of minions or a percentage, above 0 (argparse type)."""
    spec = text.strip()
    found = _SPEC.match(spec)
    if not found or float(spec.rstrip("%")) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a batch size: give a number of minions (10) or a "
                                         "percentage of the targeted minions (25%), above 0")
    return spec


def batch_size(spec: str, minions: int) -> int:
    """How many minions run at once (Salt's get_batch_size)."""
    if spec.endswith("%"):
        share = float(spec[:-1]) / 100.0 * minions
        return max(1, math.ceil(share)) if share < 1 else int(share)
    return max(1, int(spec))


@dataclass
class BatchOutcome:
    minions: list[str]                      # those that answered the ping
    down: list[str]                         # targeted, but did not answer the ping: no job sent
    returns: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)   # started, but did not return
    not_started: list[str] = field(default_factory=list)  # --failhard stopped the batch before them
    hide_timeout: bool = False

    def exit_status(self) -> int:
        from runtime.cli.job_output import retcode_of

        if not self.minions:
            return 2   # nothing was sent: no targeted minion answered (salt: "No return received", 2)
        highest = max((retcode_of(r) for r in self.returns.values()), default=0)
        if ((self.missing or self.down) and not self.hide_timeout) or self.not_started:
            highest = max(highest, 1)
        return highest


@dataclass
class _Running:
    jid: str
    started: float
    deadline: float


class BatchRun:
    """One batch run through a LocalClient, printing with a ReturnPrinter."""

    def __init__(self, client: LocalClient, printer: ReturnPrinter, spec: str, *, wait: float, failhard: bool,
                 timeout: float, gather_job_timeout: float, hide_timeout: bool = False):
        self.client = client
        self.printer = printer
        self.spec = spec
        self.wait = wait
        self.failhard = failhard
        self.timeout = timeout
        self.gather_job_timeout = gather_job_timeout
        self.hide_timeout = hide_timeout

    def ping(self, tgt: Any, tgt_type: str) -> tuple[list[str], list[str]]:
        """(minions that answered test.ping, minions targeted that did not)."""
        found = self.client.cmd(tgt, "test.ping", tgt_type=tgt_type, timeout=self.timeout,
                                check_running=False)
        return sorted(found.returns), sorted(found.missing)

    def run(self, tgt: Any, tgt_type: str, fun: str, arg: list[Any], kwarg: dict[str, Any]) -> BatchOutcome:
        up, down = self.ping(tgt, tgt_type)
        outcome = BatchOutcome(up, down, hide_timeout=self.hide_timeout)
        for minion_id in down:
            print(f"Minion {minion_id} did not respond. No job will be sent.", flush=True)
        if not up:
            print("ERROR: No return received: no targeted minion answered the ping", file=sys.stderr)
            return outcome
        size = batch_size(self.spec, len(up))
        pending = list(up)
        running: dict[str, _Running] = {}
        cooling: list[float] = []          # when places freed by returns may be used again
        halted = False
        listener = self.client.listener()
        try:
            while pending or running:
                now = time.monotonic()
                cooling = [t for t in cooling if t > now]
                free = size - len(running) - len(cooling)
                if free > 0 and pending and not halted:
                    self._start(pending[:free], fun, arg, kwarg, running)
                    del pending[:free]
                for minion_id, event in self._returns(listener, running):
                    del running[minion_id]
                    outcome.returns[minion_id] = event
                    self.printer.returned(minion_id, event)
                    if self.wait:
                        cooling.append(time.monotonic() + self.wait)
                    if self.failhard and _failed(event) and not halted:
                        halted = True
                        print(f"ERROR: --failhard: {minion_id} returned a non-zero retcode; no more minions "
                              "are started", file=sys.stderr)
                for minion_id in self._timed_out(running):
                    del running[minion_id]
                    outcome.missing.append(minion_id)
                    if not self.hide_timeout:
                        self.printer.missing(minion_id)
                    if self.wait:
                        cooling.append(time.monotonic() + self.wait)
                if halted:
                    outcome.not_started = list(pending)
                    pending.clear()
                    if not running:
                        break
                if not running and pending and cooling:
                    time.sleep(max(0.0, min(cooling) - time.monotonic()))
        finally:
            if listener is not None:
                listener.close()
        if outcome.missing and not self.hide_timeout:
            print(f"ERROR: Minions did not return: {', '.join(sorted(outcome.missing))}", file=sys.stderr)
        return outcome

    def _start(self, minions: list[str], fun: str, arg: list[Any], kwarg: dict[str, Any],
               running: dict[str, _Running]) -> None:
        print(f"\nExecuting run on {sorted(minions)}\n", flush=True)
        published = self.client.publish(minions, fun, arg, kwarg, "list", max(1, int(self.timeout)))
        now = time.monotonic()
        for minion_id in minions:
            running[minion_id] = _Running(published.jid, now, now + self.timeout)

    def _returns(self, listener: EventListener | None,
                 running: Mapping[str, _Running]) -> list[tuple[str, dict[str, Any]]]:
        """The returns that arrived (waiting up to 0.2 s for the first) of minions still running."""
        wanted = {(r.jid, m) for m, r in running.items()}
        if not wanted:
            return []
        if listener is None:   # a publisher_acl user: the job cache, through the master
            time.sleep(0.2)
            found = []
            for jid in sorted({jid for jid, _ in wanted}):
                reply = self.client.job_returns(jid)
                found += [(m, {"id": m, "jid": jid, **r}) for m, r in reply.returns.items() if (jid, m) in wanted]
            return found
        out: list[tuple[str, dict[str, Any]]] = []
        event = listener.get(0.2)
        while event is not None:
            tag, data = event
            parts = tag.split("/")
            if len(parts) == 5 and parts[:2] == ["salt", "job"] and parts[3] == "ret" and \
                    (parts[2], parts[4]) in wanted and data.get("id") == parts[4]:
                out.append((parts[4], data))
                wanted.discard((parts[2], parts[4]))
            event = listener.get(0.0)
        return out

    def _timed_out(self, running: dict[str, _Running]) -> list[str]:
        """Minions past their timeout that do not say they still run the job (saltutil.find_job):
        one that does gets another --timeout, as salt waits for it."""
        now = time.monotonic()
        gone: list[str] = []
        for minion_id in [m for m, r in running.items() if r.deadline <= now]:
            entry = running[minion_id]
            if self.gather_job_timeout <= 0 or \
                    not self.client.still_running(entry.jid, [minion_id], self.gather_job_timeout):
                gone.append(minion_id)
            else:
                entry.deadline = time.monotonic() + self.timeout
        return gone


def _failed(event: Mapping[str, Any]) -> bool:
    from runtime.cli.job_output import retcode_of

    return retcode_of(event) != 0
