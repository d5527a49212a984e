"""What a state run returns, as Salt reports it: which execution functions return a state run,
and the exit code a run means (the minion's retcode, ``saltpan call``'s exit status)."""

from __future__ import annotations

from typing import Any

# Execution functions whose return is a state run (shown by the highstate outputter).
STATE_FUNCTIONS = frozenset({"state.apply", "state.highstate", "state.sls", "state.single"})


def state_retcode(result: Any) -> int:
    """Salt's state exit code: 1 when the run did not compile (a list of errors), 2 when a state
    failed, else 0."""
    if isinstance(result, list):
        return 1
    if isinstance(result, dict) and any(isinstance(r, dict) and r.get("result") is False for r in result.values()):
        return 2
    return 0
