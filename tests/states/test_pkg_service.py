"""pkg (queries against the real package database; installs only in test mode); services: test_service.py."""

from __future__ import annotations

import os
import shutil

import pytest

from runtime.states import pkg

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg")


@needs_dpkg
def test_installed_package_is_already_installed(ctx):
    ret = pkg.installed(ctx, "dpkg")
    assert ret == {"name": "dpkg", "changes": {}, "result": True, "comment": "Package dpkg is already installed"}
    assert pkg.installed(ctx, "x", pkgs=["dpkg", {"coreutils": ">=1.0"}])["changes"] == {}


@needs_dpkg
def test_removed_for_a_package_not_installed_changes_nothing(ctx):
    ret = pkg.removed(ctx, "saltpan-no-such-package")
    assert ret["result"] is True and ret["changes"] == {}
    assert "None of the targeted packages are installed" in ret["comment"]


@needs_dpkg
def test_test_mode_install_and_remove_predict_without_touching(tctx, sandbox):
    before_db = os.stat("/var/lib/dpkg/status").st_mtime_ns
    ret = pkg.installed(tctx, "saltpan-no-such-package")
    assert ret["result"] is None
    assert ret["changes"] == {"saltpan-no-such-package": {"old": "", "new": "installed"}}
    removal = pkg.removed(tctx, "dpkg")
    assert removal["result"] is None and removal["changes"] == {"dpkg": {"new": "removed", "old": ""}}
    assert os.stat("/var/lib/dpkg/status").st_mtime_ns == before_db


@needs_dpkg
def test_unsatisfiable_version_fails_without_installing(ctx):
    before_db = os.stat("/var/lib/dpkg/status").st_mtime_ns
    ret = pkg.installed(ctx, "dpkg", version="<0.1")
    assert ret["result"] is False and "No version of dpkg matching '<0.1'" in ret["comment"]
    assert os.stat("/var/lib/dpkg/status").st_mtime_ns == before_db


def test_rpm_version_compare():
    assert pkg._rpmvercmp("1.10", "1.9") == 1
    assert pkg._rpmvercmp("1.0~rc1", "1.0") == -1
    assert pkg._rpmvercmp("2.0a", "2.0") == 1
    assert pkg.Dnf().compare("1:1.0-1", ">", "2.0-1")


@needs_dpkg
def test_pkg_mod_watch_reruns_the_function(ctx):
    assert pkg.mod_watch(ctx, "dpkg", sfun="installed")["comment"] == "Package dpkg is already installed"
    assert pkg.mod_watch(ctx, "dpkg", sfun="held")["result"] is False
