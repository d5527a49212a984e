"""Ten unmodified public formulas against real Salt 3008.3 (tests/realworld/runner.py).

Required: the pillar, highstate and lowstate views of every formula (`saltpan compile` with the
masterless minion config of the case, as ../shared/realworld/run.py runs it), and `state.apply
test=True` (`saltpan call --local`), compared per state tag on `result`.

Two formulas read the host while rendering (timezone: `file.file_exists('/etc/localtime')`; users:
`cmd.has_exec('git')`).  `saltpan compile` with a masterless minion's own config compiles *this*
host, as `salt-call --local state.show_lowstate` does, so those reads read it (docs/compile.md):
the tests check that this host has what Salt's capture host had.  With `--offline` they answer as on
a host without the thing, which is what every other compile (another minion, the master) does.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.realworld import runner

REQUIRED = ("pillar", "highstate", "lowstate")

# what this host needs to have for the host reads of these formulas to see what Salt's capture host had
HOST_NEEDS = {"timezone": lambda: os.path.isfile("/etc/localtime"), "users": lambda: shutil.which("git") is not None}



def _params() -> list:
    return [pytest.param(name, view, id=f"{name}-{view}") for name in runner.case_names() for view in REQUIRED]


@pytest.mark.parametrize(("name", "view"), _params())
def test_compile_matches_salt(name: str, view: str) -> None:
    need = HOST_NEEDS.get(name)
    if need is not None and not need():
        pytest.skip(f"optional: this host lacks what Salt's capture host had for {name}'s host reads")
    outcome = runner.run(name, view)
    assert outcome.ok, f"{name} {view}:\n{outcome.message}"


@pytest.mark.parametrize("name", sorted(HOST_NEEDS))
@pytest.mark.parametrize("view", ["highstate", "lowstate"])
def test_live_render_matches_salt_on_a_host_like_salts(name: str, view: str) -> None:
    if not HOST_NEEDS[name]():
        pytest.skip(f"optional: this host lacks what Salt's capture host had for {name}")
    outcome = runner.run(name, f"live_{view}")
    assert outcome.ok, f"{name} live {view}:\n{outcome.message}"


@pytest.mark.parametrize("name", sorted(HOST_NEEDS))
def test_offline_compile_answers_as_a_host_without_the_thing(name: str) -> None:
    """--offline (and any compile for another minion) never reads this host: the formulas take their
    'absent' branch, so the lowstate differs from Salt's capture."""
    outcome = runner.run(name, "offline_lowstate")
    assert not outcome.ok, f"{name}: --offline gave the host-read answer"
    assert "missing" in outcome.message or "unexpected" in outcome.message or "got" in outcome.message


@pytest.mark.parametrize("name", runner.case_names())
def test_apply_test_matches_salt(name: str) -> None:
    outcome = runner.run(name, "apply_test")
    assert outcome.ok, f"{name} apply_test:\n{outcome.message}"


def test_the_ten_formulas_are_here() -> None:
    assert runner.case_names() == ["apache", "mysql", "nginx", "ntp", "openssh", "postgres", "salt", "sysctl",
                                   "timezone", "users"]
