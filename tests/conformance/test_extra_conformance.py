"""The extra conformance cases (tests/conformance/extra_cases, expected/ from real Salt 3008.3) and
the deliberate deviations (tests/conformance/extra_deviations, expected/ is saltpan's documented
behaviour), one pytest item per (case, check).

KNOWN_DIFFERENCES lists the checks that still differ from Salt, each with its reason; they run as
strict xfail, so fixing one makes the suite say so.
"""

from __future__ import annotations

import os

import pytest

from tests.conformance import oracle

HERE = os.path.dirname(os.path.abspath(__file__))
DIRS = {"extra": os.path.join(HERE, "extra_cases"), "deviation": os.path.join(HERE, "extra_deviations")}

KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def _params() -> list:
    params = []
    for kind, cases_dir in DIRS.items():
        for name in oracle.case_names(cases_dir):
            case = oracle.load_case(name, cases_dir)
            for check in case.checks:
                reason = KNOWN_DIFFERENCES.get((name, check))
                marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
                params.append(pytest.param(case, check, id=f"{kind}-{name}-{check}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "check"), _params())
def test_extra_conformance(case: oracle.Case, check: str) -> None:
    outcome = oracle.run_check(case, check)
    if not outcome.ok:
        pytest.fail(f"{case.name} {check}:\n{outcome.message}", pytrace=False)


@pytest.mark.parametrize("kind", sorted(DIRS))
def test_extra_cases_are_complete(kind: str) -> None:
    for name in oracle.case_names(DIRS[kind]):
        case = oracle.load_case(name, DIRS[kind])
        assert case.checks, f"{name} declares no checks"
        for check in case.checks:
            assert case.expected(f"{check}.json") is not None, f"{name}: no expected/{check}.json"
