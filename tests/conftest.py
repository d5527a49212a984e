"""Suite-wide policy: under CI a skipped test is a failure unless its reason says it is optional.

A test skips when the machine lacks what it needs (root, PostgreSQL, useradd, ...).  On a
developer's laptop that is fine; in CI it would hide the very tests the issues require to run
("skipping them in CI is a failure").  CI is recognised by the ``CI`` environment variable
(``.ci/run`` sets it; ``0``, ``false``, ``no`` and empty mean "not CI").  A skip whose reason
starts with ``optional:`` (real Salt not installed, systemd present or absent) stays a skip.
"""

from __future__ import annotations

import pytest

from tests.pgserver import postgres  # noqa: F401  (the suite's PostgreSQL server, a session fixture)
from tests.strict import OPTIONAL, strict


# Test files that drive dpkg/apt or debconf on this host: one at a time (they share dpkg's lock).
DPKG_FILES = frozenset({"tests/states/test_pkg_real.py", "tests/states/test_pkg_service.py",
                        "tests/states/test_pkgrepo.py", "tests/states/test_alternatives.py",
                        "tests/states/test_debconf.py", "tests/modules/test_pkg.py"})


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``--dist loadgroup``) a file's tests stay on one worker,
    in order, so its module fixtures (clusters, servers) start once and its stateful sequences hold;
    files whose tests use the attack suite's lab (a session fixture: a master, minions, attackers)
    all run on one worker, and so do the files that drive dpkg."""
    lab_files = {item.nodeid.split("::", 1)[0] for item in items if "lab" in getattr(item, "fixturenames", ())}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "security-lab" if path in lab_files else "dpkg" if path in DPKG_FILES else path
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and strict()) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if reason.removeprefix("Skipped: ").startswith(OPTIONAL):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under CI, where this test must run: {reason}"
