"""Same master config, same git repositories: saltpan's pillar and lowstate are real Salt 3008.3's.

The stored outputs (tests/gitfs/data/expected, made by ``python -m tests.gitfs.salt_oracle --write``)
always run; where real Salt is installed, it is also run now on freshly built repositories.
"""

from __future__ import annotations

import os

import pytest

from tests.conformance.oracle import norm_lowstate
from tests.gitfs import salt_oracle
from tests.gitfs.salt_oracle import CHECKS, VARIANTS, Case, expected, minions, run_salt, run_saltpan

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def _norm(check: str, data: object) -> object:
    return norm_lowstate(data) if check == "lowstate" else data


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return Case(str(tmp_path_factory.mktemp("gitfs-compat")))


@pytest.fixture(scope="module")
def saltpan_outputs(case: Case) -> dict[tuple[str, str, str], object]:
    out = {}
    for variant in VARIANTS:
        for index, (minion, grains) in enumerate(minions().items()):
            for check in CHECKS:
                # the first compile of a variant fetches its clones; the others read the cache
                out[(variant, minion, check)] = run_saltpan(case, variant, check, minion, grains,
                                                            fetch=index == 0 and check == "pillar")
    return out


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("minion", list(minions()))
@pytest.mark.parametrize("check", list(CHECKS))
def test_saltpan_gives_what_salt_gave(saltpan_outputs: dict, variant: str, minion: str, check: str) -> None:
    want = expected(variant, minion, check)
    assert want or check == "lowstate", "the stored pillar must not be empty (the case would prove nothing)"
    assert _norm(check, saltpan_outputs[(variant, minion, check)]) == _norm(check, want)


def test_the_case_covers_both_saltenvs_and_git_pillar() -> None:
    """The stored outputs exercise what the case is for (guards against a regenerated, hollow case)."""
    web_base = expected("base", "web1", "lowstate")
    assert {c["__env__"] for c in web_base} == {"base", "dev"}  # merge: the dev branch's top adds dev
    assert any(c["__sls__"] == "formulas.nginx" for c in web_base)  # the mountpoint remote
    assert {c["__env__"] for c in expected("saltenv_dev", "web1", "lowstate")} == {"dev"}
    assert expected("base", "web1", "pillar")["who"] == "master-branch"
    assert expected("saltenv_dev", "web1", "pillar")["who"] == "dev-branch"  # __env__ follows saltenv
    assert expected("base", "db1", "pillar")["database"]["replicas"] == 3  # the root: pillar remote


@pytest.mark.skipif(salt_oracle.salt_call_path() is None,
                    reason="optional: real Salt (salt-call) is not installed; the stored outputs still ran")
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_real_salt_now_agrees(case: Case, saltpan_outputs: dict, variant: str) -> None:
    salt_call = salt_oracle.salt_call_path()
    assert salt_call is not None and os.access(salt_call, os.X_OK)
    for minion, grains in minions().items():
        for check in CHECKS:
            salt = run_salt(salt_call, case, variant, check, minion, grains)
            assert _norm(check, saltpan_outputs[(variant, minion, check)]) == _norm(check, salt), (variant, minion,
                                                                                                  check)
