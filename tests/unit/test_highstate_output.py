"""The highstate outputter against Salt 3008.3's (tests/unit/fixtures/highstate_output.json, captured
by tools/capture_salt_highstate_output.py) under each state_output / state_verbose setting."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from runtime.cli.highstate_output import format_state_run

FIXTURE = json.loads((Path(__file__).resolve().parent / "fixtures" / "highstate_output.json").read_text())


@pytest.mark.parametrize("label", sorted(FIXTURE["outputs"]))
def test_matches_salts_highstate_outputter(label: str) -> None:
    case = FIXTURE["outputs"][label]
    results = ["Rendering SLS 'base:web' failed: Jinja variable 'x' is undefined"] if label == "compile_error" \
        else copy.deepcopy(FIXTURE["results"])
    text, ok = format_state_run("local", results, color=False, opts=case["opts"])
    assert text == case["text"]
    assert ok is False  # a failed state (or a compile error) in every sample


def test_all_green_run_succeeds() -> None:
    results = {k: dict(v, result=True) for k, v in FIXTURE["results"].items()}
    text, ok = format_state_run("m1", results, opts={"state_output": "terse"})
    assert ok and "Failed:    0" in text
