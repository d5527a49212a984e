"""debconf.set for real on a throwaway package name, with the real debconf-get-selections unpacked
from the debconf-utils .deb that tools/test-packages.sh downloads (installing debconf-utils would
change what Salt and saltpan report on this host: without it Salt's debconf state is unavailable,
and so is saltpan's, as the test below checks)."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess

import pytest

from compiler.requisites import order_chunks
from runtime.executor import Executor
from runtime.states import StateContext, debconf, has_mod_watch

DEBS = os.environ.get("SALTPAN_TEST_DEBS", "/var/cache/saltpan-test-debs")


@pytest.fixture
def debconf_utils(tmp_path, monkeypatch):
    found = sorted(glob.glob(os.path.join(DEBS, "debconf-utils_*.deb")))
    if not found or shutil.which("debconf-set-selections") is None or os.geteuid() != 0:
        pytest.skip("optional: needs root, debconf and the debconf-utils .deb (tools/test-packages.sh)")
    subprocess.run(["dpkg-deb", "-x", found[-1], str(tmp_path / "du")], check=True)
    monkeypatch.setenv("PATH", f"{tmp_path}/du/usr/bin:{os.environ['PATH']}")
    package = f"saltpan-test-{secrets.token_hex(4)}"
    yield package
    subprocess.run(["debconf-communicate", package], input="PURGE\n", text=True, capture_output=True)


def test_set_for_real(debconf_utils):
    package = debconf_utils
    data = {f"{package}/name": {"type": "string", "value": "hello world"},
            f"{package}/enable": {"type": "boolean", "value": True}}
    ret = debconf.set(StateContext(test=True), package, data=data)
    assert ret["result"] is None and ret["changes"] == {f"{package}/name": "New value: hello world",
                                                        f"{package}/enable": "New value: true"}
    assert debconf.selections(package) is None
    ret = debconf.set(StateContext(), package, data=data)
    assert ret == {"name": package, "result": True, "comment": "",
                   "changes": {f"{package}/name": "hello world", f"{package}/enable": "true"}}
    assert sorted(debconf.selections(package)) == [[f"{package}/enable", "boolean", "true"],
                                                   [f"{package}/name", "string", "hello world"]]
    again = debconf.set(StateContext(), package, data=data)
    assert (again["changes"], again["comment"]) == ({}, "All specified answers are already set")
    ret = debconf.set(StateContext(), package, data={f"{package}/pw": {"type": "password", "value": "s3"}})
    assert ret["changes"] == {f"{package}/pw": "(password hidden)"}


@pytest.mark.skipif(shutil.which("debconf-get-selections") is not None,
                    reason="optional: debconf-utils is installed on this host")
def test_unavailable_without_debconf_utils():
    # Salt 3008.3 on Debian 12 without debconf-utils (the mysql formula's apply_test):
    chunk = {"state": "debconf", "fun": "set", "name": "mysql-server", "data": {}, "__id__": "d", "__sls__": "s",
             "__env__": "base", "order": 1}
    lowstate, _ = order_chunks([chunk], has_mod_watch)
    (ret,) = Executor(lowstate, lambda low, t: StateContext(test=t), test=True).apply().values()
    assert ret["result"] is False
    assert ret["comment"] == ("State 'debconf.set' was not found in SLS 's'\nReason: 'debconf' __virtual__ "
                              "returned False: debconf module could not be loaded\n")
