"""Issue 5: publisher_acl with a real local user (created for the test, removed after it).

The master (root) gives the user a client key of its own (``cachedir/.<user>_key``, owned by
the user); the user runs `saltpan run` as itself and may publish only what publisher_acl
allows: exact function names (``test.ping`` never allows ``test.pingX``), no comma lists, and
only to minions its rules cover (every minion a target reaches must be allowed).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster
from tests.integration.conftest import write_trees
from tests.userpython import python_for
from tests.userpython import run_as as run_as_user

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                 reason="needs root and useradd to create a throwaway user")]


@pytest.fixture(scope="module")
def acl_user() -> Iterator[str]:
    name = f"spacl{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture(scope="module")
def acl_cluster(acl_user: str) -> Iterator[Cluster]:
    # the user must be able to walk to cachedir: a temp dir outside pytest's private one
    base = Path(tempfile.mkdtemp(prefix="saltpan-acl-", dir="/tmp"))
    base.chmod(0o755)
    write_trees(base)
    cl = Cluster(base, master_opts={"publisher_acl": {acl_user: ["test.ping", {"web*": ["test.echo", "test.sleep"]}]}})
    cl.add_minion("web01", {"role": "web"})
    cl.add_minion("web02", {"role": "web"})
    cl.add_minion("db01", {"role": "db"})
    try:
        with cl.running():
            yield cl
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def user_python(acl_user: str) -> tuple[str, str]:
    """An interpreter the throwaway user may run, and the PYTHONPATH giving it saltpan (tests/userpython.py)."""
    found = python_for(acl_user)
    if found is None:
        pytest.fail(f"no Python {sys.version_info.major}.{sys.version_info.minor} that user {acl_user} may run "
                    "exists on this host (install Debian's python3)")
    return found


def run_as(cl: Cluster, user: str, python: tuple[str, str], *args: str) -> subprocess.CompletedProcess:
    return run_as_user(user, [python[0], "-m", "runtime", "run", "-c", str(cl.master_conf), *args], python[1])


def test_client_key_belongs_to_the_user(acl_cluster: Cluster, acl_user: str) -> None:
    cachedir = Path(acl_cluster.opts()["cachedir"])
    key = cachedir / f".{acl_user}_key"
    st = key.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (pwd.getpwnam(acl_user).pw_uid, 0o600)
    assert cachedir.stat().st_mode & 0o777 == 0o711  # walkable, not listable


def test_allowed_function_runs(acl_cluster: Cluster, acl_user: str, user_python: tuple[str, str]) -> None:
    proc = run_as(acl_cluster, acl_user, user_python, "*", "test.ping", "--out", "json", "--static")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"web01": True, "web02": True, "db01": True}
    proc = run_as(acl_cluster, acl_user, user_python, "web*", "test.echo", "hi", "--out", "json", "--static")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"web01": "hi", "web02": "hi"}
    listed = json.loads(acl_cluster.saltpan("jobs", "-c", str(acl_cluster.master_conf), "list", "--limit", "1",
                                            "--out", "json").stdout)
    assert [job["User"] for job in listed.values()] == [acl_user]


def test_a_long_job_is_waited_for(acl_cluster: Cluster, acl_user: str, user_python: tuple[str, str]) -> None:
    """The client asks saltutil.find_job about its own job once --timeout passes (allowed although
    the user's ACL does not list it) and keeps waiting while the job runs."""
    proc = run_as(acl_cluster, acl_user, user_python, "web01", "test.sleep", "3", "--timeout", "1", "--out", "json",
                  "--static")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == {"web01": True}
    # but find_job about someone else's job, or as a job of its own, is the ACL's business
    root_jid = acl_cluster.run("web01", "test.echo", "x", "--async").stdout.split()[-1]
    proc = run_as(acl_cluster, acl_user, user_python, "web01", "saltutil.find_job", root_jid)
    assert proc.returncode == 2 and "may not run saltutil.find_job" in proc.stderr


@pytest.mark.parametrize(("args", "why"), [
    (["*", "test.pingX"], "may not run test.pingX"),
    (["*", "test.ping,cmd.run"], "not a single module.function name"),
    (["*", "cmd.run", "id"], "may not run cmd.run"),
    (["*", "test.echo", "hi"], "may not run test.echo on db01"),
    (["-L", "web01,db01", "test.echo", "hi"], "may not run test.echo on db01"),
    (["-C", "web* or G@role:db", "test.echo", "hi"], "may not run test.echo on db01"),
    (["-G", "role:db", "test.echo", "hi"], "may not run test.echo on db01"),
    (["nosuch*", "test.ping"], "No minions matched the target"),
])
def test_refused(acl_cluster: Cluster, acl_user: str, user_python: tuple[str, str], args: list[str],
                 why: str) -> None:
    proc = run_as(acl_cluster, acl_user, user_python, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert why in proc.stderr
    assert proc.stdout == ""


def test_a_user_without_a_client_key_cannot_publish(acl_cluster: Cluster, user_python: tuple[str, str]) -> None:
    proc = run_as(acl_cluster, "nobody", user_python, "*", "test.ping")
    assert proc.returncode == 2
    assert "cannot read the client key" in proc.stderr
