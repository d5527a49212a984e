"""pkg.* through saltpan call, for real: a throwaway package from a local APT repository built here
(file://, trusted, no network for the package itself), installed, upgraded, removed and purged.

Return shapes captured from Salt 3008.3 (aptpkg) on Debian 12 with such a repository:

    pkg.latest_version P          -> "1.0" (not installed), "" once 1.0 is installed
    pkg.upgrade_available P       -> True before the install, False after
    pkg.install P                 -> {P: {old: "", new: "1.0"}}, then {} (already installed)
    pkg.remove P                  -> {P: {new: "", old: "1.0"}}, then {}
    pkg.purge P                   -> {removed: {}, installed: {P: {new: "", old: "1.0"}}}
    pkg.install nosuchpkg         -> error "Problem encountered installing package(s). Additional info
                                     follows: changes: {} errors: - E: Unable to locate package nosuchpkg"
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.modules.conftest import Minion

pytestmark = [
    pytest.mark.skipif(not all(shutil.which(t) for t in ("apt-get", "dpkg-deb", "dpkg-scanpackages")),
                       reason="optional: needs apt-get, dpkg-deb and dpkg-scanpackages (a Debian-family host)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="optional: installing packages for real needs root"),
]


class Repo:
    """A flat file:// repository of one throwaway package, known to apt through its own list file."""

    def __init__(self) -> None:
        self.tag = secrets.token_hex(4)
        self.package = f"saltpan-mod-pkg-{self.tag}"
        # apt reads file:// repositories as its unprivileged _apt user: outside pytest's 0700 tmp dirs
        self.dir = Path(tempfile.mkdtemp(prefix="saltpan-pkgmod-"))
        self.dir.chmod(0o755)
        self.list_file = Path(f"/etc/apt/sources.list.d/saltpan-mod-{self.tag}.list")
        self.list_file.write_text(f"deb [trusted=yes] file:{self.dir} ./\n")

    def build(self, version: str, into_repo: bool = True) -> Path:
        root = self.dir / f"build-{version}"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(
            f"Package: {self.package}\nVersion: {version}\nArchitecture: all\nMaintainer: t <t@example.invalid>\n"
            "Description: throwaway package for the saltpan pkg module tests\n")
        (root / "DEBIAN" / "conffiles").write_text(f"/etc/{self.package}.conf\n")
        (root / "etc").mkdir()
        (root / "etc" / f"{self.package}.conf").write_text("x = 1\n")
        deb = self.dir / f"{self.package}_{version}_all.deb" if into_repo else self.dir / f"loose-{version}.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True,
                       capture_output=True, timeout=120)
        shutil.rmtree(root)
        if into_repo:
            index = subprocess.run(["dpkg-scanpackages", "-m", ".", "/dev/null"], cwd=self.dir, check=True,
                                   capture_output=True, text=True, timeout=120).stdout
            (self.dir / "Packages").write_text(index)
        for path in self.dir.iterdir():
            path.chmod(0o755 if path.is_dir() else 0o644)
        return deb

    def cleanup(self) -> None:
        subprocess.run(["dpkg", "--purge", self.package], capture_output=True, timeout=300)
        self.list_file.unlink(missing_ok=True)
        escaped = str(self.dir).strip("/").replace("/", "_")
        for path in Path("/var/lib/apt/lists").glob(f"*{escaped}*"):
            path.unlink()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def repo() -> Iterator[Repo]:
    made = Repo()
    try:
        yield made
    finally:
        made.cleanup()


def test_install_upgrade_remove_and_purge_for_real(minion: Minion, repo: Repo) -> None:
    name = repo.package
    repo.build("1.0")
    refreshed = minion.call("pkg.refresh_db")
    assert any(str(repo.dir) in source and fetched is True for source, fetched in refreshed.items()), refreshed
    assert minion.call("pkg.version", name) == ""
    assert minion.call("pkg.latest_version", name, "refresh=False") == "1.0"
    assert minion.call("pkg.available_version", name, "refresh=False") == "1.0"
    assert minion.call("pkg.upgrade_available", name, "refresh=False") is True

    assert minion.call("pkg.install", name) == {name: {"old": "", "new": "1.0"}}
    assert minion.call("pkg.install", name) == {}
    assert minion.call("pkg.version", name) == "1.0"
    assert minion.call("pkg.list_pkgs")[name] == "1.0"
    assert minion.call("pkg.latest_version", name, "refresh=False") == ""
    assert minion.call("pkg.upgrade_available", name, "refresh=False") is False

    repo.build("1.1")
    assert minion.call("pkg.refresh_db", "cache_valid_time=3600") == {}      # the index is younger than that
    minion.call("pkg.refresh_db")
    assert minion.call("pkg.latest_version", name, "bash", "refresh=False")[name] == "1.1"
    assert minion.call("pkg.upgrade_available", name, "refresh=False") is True
    assert minion.call("pkg.list_upgrades", "refresh=False")[name] == "1.1"
    assert minion.call("pkg.install", f"pkgs=[{{{name}: '1.1'}}]") == {name: {"old": "1.0", "new": "1.1"}}

    assert minion.call("pkg.remove", name) == {name: {"old": "1.1", "new": ""}}
    assert minion.call("pkg.remove", name) == {}
    assert minion.call("pkg.purge", name) == {"removed": {name: {"old": "1.1", "new": ""}}, "installed": {}}
    assert minion.call("pkg.install", f"pkgs=[{name}]") == {name: {"old": "", "new": "1.1"}}
    assert minion.call("pkg.purge", name) == {"removed": {}, "installed": {name: {"old": "1.1", "new": ""}}}
    assert minion.call("pkg.purge", name) == {}


def test_install_from_a_package_file_of_the_state_tree(minion: Minion, repo: Repo) -> None:
    deb = repo.build("2.0", into_repo=False)
    (minion.states / "pkgs").mkdir()
    shutil.copy(deb, minion.states / "pkgs" / "mine.deb")
    sources = f"sources=[{{{repo.package}: salt://pkgs/mine.deb}}]"
    assert minion.call("pkg.install", sources) == {repo.package: {"old": "", "new": "2.0"}}
    assert minion.call("pkg.version", repo.package) == "2.0"


def test_a_package_no_repository_has_is_a_clear_error(minion: Minion) -> None:
    err = minion.error("pkg.install", "saltpan-no-such-package-anywhere")
    assert "Problem encountered installing package(s)" in err
    assert "E: Unable to locate package saltpan-no-such-package-anywhere" in err
