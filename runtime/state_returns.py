"""What a state run returns, as Salt reports it: which execution functions return a state run,
the exit code a run means (the minion's retcode, ``saltpan call``'s exit status), and how their
``test=`` argument reads."""

from __future__ import annotations

from typing import Any

# Execution functions whose return is a state run (shown by the highstate outputter).
STATE_FUNCTIONS = frozenset({"state.apply", "state.highstate", "state.sls", "state.single"})


PILLAR_FAILED = "Pillar failed to render with the following messages:"


def state_retcode(result: Any) -> int:
    """Salt's state exit code (salt.defaults.exitcodes): 5 when the pillar did not render
    (EX_PILLAR_FAILURE), 1 when the states did not compile (a list of errors), 2 when a state
    failed, else 0."""
    if isinstance(result, list):
        return 5 if result[:1] == [PILLAR_FAILED] else 1
    if isinstance(result, dict) and any(isinstance(r, dict) and r.get("result") is False for r in result.values()):
        return 2
    return 0


TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off", "")


def dry_run_flag(value: Any) -> bool:
    """The ``test=`` argument of a state function as a boolean; ValueError for anything else
    (``test=Tru`` must not apply for real)."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
    elif isinstance(value, (bool, int)):
        return bool(value)
    raise ValueError(f"test={value!r} is not a boolean: nothing was applied; pass test=True (a dry run) or "
                     "test=False")
