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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``--dist loadgroup``) a file's tests stay on one worker,
    so its module fixtures (clusters, servers) start once; the attack suite's tests share one lab
    (a session fixture: a master, minions, attackers), so they all run on one worker too."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        group = "security-lab" if "lab" in fixtures else item.nodeid.split("::", 1)[0]
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
