"""Fixtures of the attack suite: one lab (real master, minions, attackers) for the whole session,
and a throwaway local user for publisher_acl (created when the suite runs as root, removed after)."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.security.lab import Lab


@pytest.fixture(scope="session")
def acl_user() -> Iterator[str | None]:
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        yield None
        return
    name = f"spsec{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True)

    def remove() -> None:
        subprocess.run(["userdel", name], capture_output=True)

    atexit.register(remove)   # also when the session is interrupted
    try:
        yield name
    finally:
        remove()


@pytest.fixture(scope="session")
def lab(acl_user: str | None) -> Iterator[Lab]:
    the_lab = Lab(acl_user)
    try:
        the_lab.start()
        yield the_lab
    finally:
        the_lab.stop()
        if not os.environ.get("SALTPAN_KEEP_LAB"):  # keep its logs to look at after a failure
            the_lab.cleanup()


@pytest.fixture
def need_user(lab: Lab) -> str:
    if lab.user is None:
        pytest.skip("needs root and useradd to create a throwaway publisher_acl user")
    return lab.user
