"""The Salt conformance corpus, one pytest item per (case, check).

Only the checks in IMPLEMENTED_CHECKS run; the others are skipped until the
state compiler and the executor land (extend the set as they do).
"""

from __future__ import annotations

import pytest

from tests.conformance import oracle

IMPLEMENTED_CHECKS = {"pillar", "top", "highstate", "lowstate", "apply_test", "apply"}


def _params() -> list:
    params = []
    for name in oracle.case_names():
        case = oracle.load_case(name)
        for check in case.checks:
            marks = [] if check in IMPLEMENTED_CHECKS else [pytest.mark.skip(reason="not implemented yet")]
            params.append(pytest.param(case, check, id=f"{name}-{check}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "check"), _params())
def test_conformance(case: oracle.Case, check: str) -> None:
    outcome = oracle.run_check(case, check)
    if not outcome.ok:
        pytest.fail(f"{case.name} {check}:\n{outcome.message}", pytrace=False)


def test_corpus_is_complete() -> None:
    names = oracle.case_names()
    assert len(names) >= 34
    for name in names:
        case = oracle.load_case(name)
        assert case.checks, f"{name} declares no checks"
        for check in case.checks:
            assert check in oracle.CHECKS, f"{name}: unknown check {check}"
            assert case.expected(f"{check}.json") is not None, f"{name}: no expected/{check}.json"
