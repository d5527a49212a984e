"""How returns of jobs are shown, and what they mean for the exit status: `saltpan run`'s printer
(also `jobs lookup`'s and a batch's), Salt's retcode of a return, and --state-output/--state-verbose
over the config."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

NO_RESPONSE = "Minion did not return. [No response]"


class ReturnPrinter:
    """Prints minions' returns in the chosen format and keeps what the exit status needs."""

    def __init__(self, args: argparse.Namespace, opts: Mapping[str, Any], fun: str):
        from runtime.state_returns import STATE_FUNCTIONS

        self.opts = opts
        self.static = bool(args.static)
        self.color = bool(getattr(args, "color", False))
        self.state_run = fun in STATE_FUNCTIONS
        self.fmt = args.out or ("highstate" if self.state_run else "nested")
        self.collected: dict[str, Any] = {}
        self.summary: list[tuple[str, bool]] = []
        self.failed_states = False

    def returned(self, minion_id: str, event: Mapping[str, Any]) -> None:
        ret = event.get("return")
        if self.static:
            self.collected[minion_id] = ret
            return
        from runtime.cli import output

        if self.fmt == "highstate" and self.state_run:
            from runtime.cli.highstate_output import format_state_run

            text, ok = format_state_run(minion_id, ret, color=self.color, opts=self.opts)
            print(text, flush=True)
            self.summary.append((minion_id, ok))
            self.failed_states = self.failed_states or not ok
        elif self.fmt == "json":
            print(json.dumps({minion_id: ret}, indent=4, default=str), flush=True)
        else:
            print(output.render(ret, self.plain_fmt, sys.stdout, label=minion_id, color=self.color), flush=True)

    @property
    def plain_fmt(self) -> str:
        return self.fmt if self.fmt != "highstate" else "nested"

    def missing(self, minion_id: str) -> None:
        from runtime.cli import output

        if self.static:
            self.collected[minion_id] = NO_RESPONSE
        else:
            print(output.render(NO_RESPONSE, self.plain_fmt, sys.stdout, label=minion_id, color=self.color),
                  flush=True)

    def finish(self, missing: int) -> None:
        from runtime.cli import output

        if self.static:
            print(output.render(self.collected, self.plain_fmt, sys.stdout, color=self.color))
        if len(self.summary) > 1:
            clean = sum(1 for _, good in self.summary if good)
            print(f"\nFleet summary: {len(self.summary)} minions returned, {clean} without failures, "
                  f"{len(self.summary) - clean} with failed states, {missing} did not return")


def retcode_of(event: Mapping[str, Any]) -> int:
    """A return's retcode, as salt reads it (a dict of retcodes: the highest)."""
    code = event.get("retcode")
    if isinstance(code, dict):
        code = max((c for c in code.values() if isinstance(c, int)), default=0)
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def state_overrides(opts: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """opts with --state-output/--state-verbose over the config's state_output/state_verbose."""
    if getattr(args, "state_output", None):
        opts["state_output"] = args.state_output
    if getattr(args, "state_verbose", None) is not None:
        opts["state_verbose"] = args.state_verbose
    return opts
