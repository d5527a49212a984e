"""pkg for real: a throwaway .deb built here is installed, upgraded, removed and purged (no network).

Each package is ``saltpan-test-pkg-<random>`` with a marker file under /usr/share and a conffile
under /etc (so a removal leaves dpkg's "rc" state for purged to clean up); a fixture purges it
whatever happens in the test.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from runtime.states import pkg

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

HAVE_DEB_TOOLS = all(shutil.which(tool) for tool in ("dpkg-deb", "dpkg-query", "dpkg", "apt-get"))
needs_deb_tools = pytest.mark.skipif(not HAVE_DEB_TOOLS, reason="needs dpkg-deb, dpkg-query and apt-get "
                                     "(a Debian-family host)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="optional: installing packages for real needs root")
DPKG_STATUS = "/var/lib/dpkg/status"


@dataclass
class Debs:
    name: str
    files: dict[str, str]  # version -> path of the .deb
    marker: str
    conffile: str


def _build(tmp_path, name: str, version: str) -> str:
    root = tmp_path / f"build-{version}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: saltpan tests <t@example.invalid>\n"
        f"Description: throwaway package for the saltpan pkg tests\n")
    (root / "DEBIAN" / "conffiles").write_text(f"/etc/{name}.conf\n")
    (root / "etc").mkdir()
    (root / "etc" / f"{name}.conf").write_text("setting = 1\n")
    share = root / "usr" / "share" / name
    share.mkdir(parents=True)
    (share / "marker").write_text(f"{version}\n")
    out = tmp_path / f"{name}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(out)], check=True,
                   capture_output=True, timeout=120)
    return str(out)


def _status(name: str) -> tuple[str, str] | None:
    """(db:Status-Abbrev, Version) of ``name``, or None when dpkg does not know it."""
    res = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Version}", name], capture_output=True,
                         text=True, timeout=60)
    if res.returncode != 0:
        return None
    abbrev, version = res.stdout.split("\t")
    return abbrev.strip(), version


@pytest.fixture
def debs(tmp_path):
    name = f"saltpan-test-pkg-{secrets.token_hex(4)}"
    built = Debs(name, {v: _build(tmp_path, name, v) for v in ("1.0", "1.1")},
                 f"/usr/share/{name}/marker", f"/etc/{name}.conf")
    try:
        yield built
    finally:
        subprocess.run(["dpkg", "--purge", name], capture_output=True, timeout=300)
        assert _status(name) is None, f"{name} is still known to dpkg after the clean-up"


@needs_deb_tools
@needs_root
def test_sources_install_for_real_and_a_second_run_changes_nothing(ctx, tctx, debs):
    sources = [{debs.name: debs.files["1.0"]}]
    db_before = os.stat(DPKG_STATUS).st_mtime_ns

    predicted = pkg.installed(tctx, debs.name, sources=sources)
    assert predicted == {"name": debs.name, "result": None,
                         "changes": {debs.name: {"old": "", "new": "1.0"}},
                         "comment": f"The following packages would be installed/updated: {debs.name}"}
    assert _status(debs.name) is None and not os.path.exists(debs.marker)
    assert os.stat(DPKG_STATUS).st_mtime_ns == db_before

    ret = pkg.installed(ctx, debs.name, sources=sources)
    assert ret["result"] is True, ret["comment"]
    assert ret["changes"] == {debs.name: {"old": "", "new": "1.0"}}
    assert ret["comment"] == "1 targeted package was installed/updated."
    assert _status(debs.name) == ("ii", "1.0")
    with open(debs.marker, encoding="utf-8") as handle:
        assert handle.read() == "1.0\n"

    again = pkg.installed(ctx, debs.name, sources=sources)
    assert again == {"name": debs.name, "result": True, "changes": {},
                     "comment": "All specified packages are already installed"}
    assert pkg.installed(tctx, debs.name, sources=sources)["changes"] == {}


@needs_deb_tools
@needs_root
def test_sources_upgrade_from_salt_url_then_downgrade_from_a_file_url(ctx, tctx, debs, roots):
    assert pkg.installed(ctx, debs.name, sources=[{debs.name: debs.files["1.0"]}])["result"] is True
    os.makedirs(os.path.join(roots, "pkgs"))
    shutil.copy(debs.files["1.1"], os.path.join(roots, "pkgs", "newer.deb"))
    upgrade = [{debs.name: "salt://pkgs/newer.deb"}]

    predicted = pkg.installed(tctx, debs.name, sources=upgrade)
    assert predicted["result"] is None and predicted["changes"] == {debs.name: {"old": "1.0", "new": "1.1"}}
    assert _status(debs.name) == ("ii", "1.0")

    ret = pkg.installed(ctx, debs.name, sources=upgrade)
    assert ret["result"] is True, ret["comment"]
    assert ret["changes"] == {debs.name: {"old": "1.0", "new": "1.1"}}
    assert _status(debs.name) == ("ii", "1.1")
    with open(debs.marker, encoding="utf-8") as handle:
        assert handle.read() == "1.1\n"
    assert pkg.installed(ctx, debs.name, sources=upgrade)["changes"] == {}

    down = pkg.installed(ctx, debs.name, sources=[{debs.name: "file://" + debs.files["1.0"]}])
    assert down["result"] is True and down["changes"] == {debs.name: {"old": "1.1", "new": "1.0"}}
    assert _status(debs.name) == ("ii", "1.0")

    purged = pkg.purged(ctx, debs.name)
    assert purged["result"] is True, purged["comment"]
    assert purged["changes"] == {"removed": {}, "installed": {debs.name: {"old": "1.0", "new": ""}}}
    assert _status(debs.name) is None and not os.path.exists(debs.conffile)


@needs_deb_tools
@needs_root
def test_removed_then_purged_for_real(ctx, tctx, debs):
    assert pkg.installed(ctx, debs.name, sources=[{debs.name: debs.files["1.0"]}])["result"] is True

    assert pkg.removed(tctx, debs.name)["changes"] == {debs.name: {"new": "removed", "old": ""}}
    assert _status(debs.name) == ("ii", "1.0")

    ret = pkg.removed(ctx, debs.name)
    assert ret == {"name": debs.name, "result": True, "changes": {debs.name: {"old": "1.0", "new": ""}},
                   "comment": "All targeted packages were removed."}
    assert not os.path.exists(debs.marker)
    assert _status(debs.name) == ("rc", "1.0") and os.path.exists(debs.conffile)
    again = pkg.removed(ctx, debs.name)
    assert again["result"] is True and again["changes"] == {}

    # removed but configured: purged still has work to do
    predicted = pkg.purged(tctx, debs.name)
    assert predicted["result"] is None and predicted["changes"] == {debs.name: {"new": "purged", "old": ""}}
    assert os.path.exists(debs.conffile)
    purged = pkg.purged(ctx, debs.name)
    assert purged == {"name": debs.name, "result": True,
                      "changes": {"removed": {debs.name: {"old": "1.0", "new": ""}}, "installed": {}},
                      "comment": "All targeted packages were purged."}
    assert _status(debs.name) is None and not os.path.exists(debs.conffile)
    done = pkg.purged(ctx, debs.name)
    assert done["result"] is True and done["changes"] == {}
    assert done["comment"] == "None of the targeted packages are installed or partially installed"


@needs_deb_tools
@needs_root
def test_missing_source_file_fails_clearly_and_installs_nothing(ctx, tctx, debs, tmp_path):
    missing = str(tmp_path / "nope.deb")
    db_before = os.stat(DPKG_STATUS).st_mtime_ns
    for context in (ctx, tctx):
        ret = pkg.installed(context, debs.name, sources=[{debs.name: missing}])
        assert ret == {"name": debs.name, "result": False, "changes": {},
                       "comment": f"Source file {missing} for package '{debs.name}' does not exist"}
    ret = pkg.installed(ctx, debs.name, sources=[{debs.name: "salt://pkgs/nope.deb"}])
    assert ret["result"] is False
    assert ret["comment"] == f"Source file salt://pkgs/nope.deb for package '{debs.name}' not found in saltenv 'base'"
    assert _status(debs.name) is None
    assert os.stat(DPKG_STATUS).st_mtime_ns == db_before


@needs_deb_tools
@needs_root
def test_a_file_holding_another_package_is_refused_before_installing(ctx, debs):
    ret = pkg.installed(ctx, "other", sources=[{"saltpan-other-name": debs.files["1.0"]}])
    assert ret["result"] is False and ret["changes"] == {}
    assert ret["comment"] == (f"Source {debs.files['1.0']} is package '{debs.name}' (version 1.0), not "
                              "'saltpan-other-name': the key of each 'sources' item must be the package in its file")
    assert _status(debs.name) is None


@needs_deb_tools
@needs_root
def test_a_file_that_is_not_a_package_fails_clearly(ctx, tmp_path):
    bogus = tmp_path / "bogus.deb"
    bogus.write_text("not an archive\n")
    ret = pkg.installed(ctx, "saltpan-bogus", sources=[{"saltpan-bogus": str(bogus)}])
    assert ret["result"] is False and ret["changes"] == {}
    assert ret["comment"].startswith(f"Unable to read package metadata from {bogus}:")
    assert "not a Debian format archive" in ret["comment"]


@needs_deb_tools
@pytest.mark.parametrize(("sources", "comment"), [
    (["saltpan-x"], "Invalidly formatted 'sources' parameter: item 'saltpan-x' is not a mapping of one package "
                    "name to its file, e.g. sources: [{foo: salt://pkgs/foo_1.0_all.deb}]"),
    ({"saltpan-x": "/x.deb"}, "Invalidly formatted 'sources' parameter: expected a list of one-key mappings, "
                              "e.g. sources: [{foo: salt://pkgs/foo_1.0_all.deb}]"),
    ([{"saltpan-x": "/a.deb"}, {"saltpan-x": "/b.deb"}], "Package 'saltpan-x' is listed more than once in 'sources'"),
    ([{"saltpan-x": None}], "Invalidly formatted 'sources' parameter: the source of package 'saltpan-x' must be a "
                            "path or a salt:// URL, not None"),
    ([{"saltpan-x": "pkgs/x.deb"}], "Source pkgs/x.deb for package 'saltpan-x' is not an absolute path or a "
                                    "salt:// URL"),
    ([{"saltpan-x": "https://example.invalid/x.deb"}],
     "Source https://example.invalid/x.deb for package 'saltpan-x' is refused: https:// package files are not "
     "verified before they would be installed; fetch the file with file.managed and a source_hash, then name "
     "its local path in 'sources'"),
    ([{"saltpan-x": "s3://bucket/x.deb"}], "Source s3://bucket/x.deb for package 'saltpan-x' has an unsupported URL "
                                           "scheme 's3' (use an absolute path or salt://)"),
])
def test_bad_sources_fail_clearly(ctx, sources, comment):
    ret = pkg.installed(ctx, "saltpan-x", sources=sources)
    assert ret == {"name": "saltpan-x", "result": False, "changes": {}, "comment": comment}


def test_pkgs_and_sources_together_are_refused(ctx):
    ret = pkg.installed(ctx, "x", pkgs=["a"], sources=[{"a": "/a.deb"}])
    assert ret == {"name": "x", "result": False, "changes": {},
                   "comment": 'Only one of "pkgs" and "sources" is permitted.'}


@needs_deb_tools
def test_sources_as_a_yaml_string(tmp_path, ctx):
    # the string form Salt accepts on the command line; an unreadable entry shows it was parsed
    missing = str(tmp_path / "gone.deb")
    ret = pkg.installed(ctx, "saltpan-y", sources=f"[{{saltpan-y: {missing}}}]")
    assert ret["comment"] == f"Source file {missing} for package 'saltpan-y' does not exist"
