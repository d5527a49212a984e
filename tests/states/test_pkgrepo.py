"""pkgrepo for real: a local APT repository (file://, flat layout) holding a .deb built here.

The repository is signed with a throwaway GnuPG key, so apt checks the key pkgrepo.managed
installs (``key_text`` into the entry's ``signed-by`` file). Its source file is
/etc/apt/sources.list.d/saltpan-test-<random>.list; the refresh updates only that source's
index (no network). Everything is removed afterwards.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import pathlib
import secrets
import shutil
import subprocess
import tempfile

import pytest

from runtime.states import StateContext, pkg, pkgrepo

HAVE_TOOLS = all(shutil.which(t) for t in ("apt-get", "apt-cache", "dpkg-deb", "dpkg", "gpg"))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HAVE_TOOLS, reason="needs apt-get, dpkg-deb and gpg (a Debian-family host)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="optional: configuring APT sources needs root"),
]


def _run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300, check=True, **kwargs)


class Repo:
    def __init__(self, tmp_path):
        # apt reads file:// repositories and signed-by keyrings as its unprivileged _apt user: pytest's
        # tmp_path (under a 0700 directory) is out of its reach, so the repository gets its own dir
        tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="saltpan-pkgrepo-"))
        tmp_path.chmod(0o755)
        self.base = tmp_path
        self.tag = secrets.token_hex(4)
        self.package = f"saltpan-test-repo-{self.tag}"
        self.dir = tmp_path / "repo"
        self.dir.mkdir()
        self.gnupg = tmp_path / "gnupg"
        self.gnupg.mkdir(mode=0o700)
        self.dir.chmod(0o755)
        self.list_file = f"/etc/apt/sources.list.d/saltpan-test-{self.tag}.list"
        self.keyring = str(tmp_path / "keyrings" / f"saltpan-test-{self.tag}.gpg")
        self._build_deb(tmp_path)
        self._index_and_sign()

    @property
    def uri(self) -> str:
        return f"file://{self.dir}"

    def _build_deb(self, tmp_path) -> None:
        root = tmp_path / "build"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(
            f"Package: {self.package}\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.invalid>\n"
            "Description: throwaway package for the saltpan pkgrepo tests\n")
        (root / "usr" / "share" / self.package).mkdir(parents=True)
        (root / "usr" / "share" / self.package / "marker").write_text("1.0\n")
        self.deb = self.dir / f"{self.package}_1.0_all.deb"
        _run("dpkg-deb", "--root-owner-group", "--build", str(root), str(self.deb))

    def _index_and_sign(self) -> None:
        data = self.deb.read_bytes()
        control = _run("dpkg-deb", "-f", str(self.deb)).stdout.strip()
        packages = (f"{control}\nFilename: ./{self.deb.name}\nSize: {len(data)}\n"
                    f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n").encode()
        (self.dir / "Packages").write_bytes(packages)
        (self.dir / "Packages.gz").write_bytes(gzip.compress(packages))
        lines = ["SHA256:"] + [f" {hashlib.sha256((self.dir / n).read_bytes()).hexdigest()} "
                               f"{(self.dir / n).stat().st_size} {n}" for n in ("Packages", "Packages.gz")]
        (self.dir / "Release").write_text("Origin: saltpan-test\nLabel: saltpan-test\n" + "\n".join(lines) + "\n")
        env = {**os.environ, "GNUPGHOME": str(self.gnupg)}
        _run("gpg", "--batch", "--passphrase", "", "--quick-gen-key", f"saltpan test {self.tag} <t@example.invalid>",
             "default", "default", "never", env=env)
        _run("gpg", "--batch", "--yes", "--clearsign", "-o", str(self.dir / "InRelease"), str(self.dir / "Release"),
             env=env)
        self.key_text = _run("gpg", "--armor", "--export", env=env).stdout

    def candidate(self) -> str:
        out = _run("apt-cache", "policy", self.package).stdout
        return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                     if line.strip().startswith("Candidate:")), "")

    def cleanup(self) -> None:
        subprocess.run(["dpkg", "--purge", self.package], capture_output=True, timeout=300)
        if os.path.exists(self.list_file):
            os.unlink(self.list_file)
        escaped = str(self.dir).strip("/").replace("/", "_")
        for path in glob.glob(f"/var/lib/apt/lists/*{escaped}*"):
            os.unlink(path)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def repo(tmp_path):
    made = Repo(tmp_path)
    yield made
    made.cleanup()


def test_managed_signed_local_repository_then_absent(repo):
    name = f"deb [signed-by={repo.keyring}] {repo.uri} ./"
    args = {"file": repo.list_file, "key_text": repo.key_text}
    test, run = StateContext(test=True), StateContext()

    ret = pkgrepo.managed(test, name, **args)
    assert ret["result"] is None and ret["changes"]["repo"] == name
    assert ret["comment"].startswith(f"Package repo '{name}' would be configured.")
    assert not os.path.exists(repo.list_file) and not os.path.exists(repo.keyring)

    ret = pkgrepo.managed(run, name, **args)
    assert ret == {"name": name, "result": True, "changes": {"repo": name, "key": {"old": None, "new": repo.keyring}},
                   "comment": f"Configured package repo '{name}'"}
    with open(repo.list_file) as handle:
        assert handle.read() == name + "\n"
    assert repo.candidate() == "1.0"  # the index was refreshed, the signature checked with the key

    again = pkgrepo.managed(run, name, **args)
    assert again == {"name": name, "result": True, "changes": {},
                     "comment": f"Package repo '{name}' already configured"}
    assert pkg.installed(run, repo.package)["changes"] == {repo.package: {"old": "", "new": "1.0"}}

    ret = pkgrepo.managed(run, name, architectures="amd64,all", **args)
    assert ret["changes"]["architectures"] == {"old": [], "new": ["amd64", "all"]}
    with open(repo.list_file) as handle:
        assert handle.read() == f"deb [signed-by={repo.keyring} arch=amd64,all] {repo.uri} ./\n"
    archname = f"deb [signed-by={repo.keyring} arch=amd64,all] {repo.uri} ./"

    assert pkgrepo.absent(run, name, refresh=False)["comment"] == f"Package repo {name} is absent"  # other arch
    ret = pkgrepo.absent(test, archname)
    assert ret["result"] is None and os.path.exists(repo.list_file)
    ret = pkgrepo.absent(run, archname, refresh=False)
    assert ret == {"name": archname, "result": True, "changes": {"repo": archname},
                   "comment": f"Removed repo {archname}"}
    assert not os.path.exists(repo.list_file)  # nothing left in it: the file goes too
    assert pkgrepo.absent(run, archname, refresh=False)["changes"] == {}


def test_a_shared_list_file_keeps_its_other_entries(repo):
    other = "deb http://deb.example.invalid/debian bookworm main"
    with open(repo.list_file, "w") as handle:
        handle.write(f"# managed by hand\n{other}\n")
    name = f"deb [trusted=yes] {repo.uri} ./"
    run = StateContext()
    assert pkgrepo.managed(run, name, file=repo.list_file, refresh=False)["changes"] == {"repo": name}
    with open(repo.list_file) as handle:
        assert handle.read() == f"# managed by hand\n{other}\n{name}\n"
    ret = pkgrepo.managed(run, name, file=repo.list_file, refresh=False, clean_file=True)
    assert ret["result"] is True
    with open(repo.list_file) as handle:
        assert handle.read() == f"{name}\n"
    with open(repo.list_file, "w") as handle:
        handle.write(f"{other} contrib\n{name}\n")
    ret = pkgrepo.absent(run, "deb http://deb.example.invalid/debian bookworm contrib", refresh=False)
    assert ret["changes"] == {"repo": "deb http://deb.example.invalid/debian bookworm contrib"}
    with open(repo.list_file) as handle:
        assert handle.read() == f"{other}\n{name}\n"


def test_bad_arguments_fail_before_touching_anything():
    run = StateContext()
    assert pkgrepo.managed(run, "deb http://x.invalid/ a", key_url="salt://k", keyid="ABCD")["comment"] == (
        'You may not use both "keyid"/"keyserver" and "key_url" argument.')
    assert pkgrepo.managed(run, "not a repo line")["result"] is False
    assert pkgrepo.managed(run, "deb http://x.invalid/ a", file="relative.list")["result"] is False
    assert pkgrepo.managed(run, "deb http://x.invalid/ a", enabled=True, disabled=False)["comment"] == (
        "Only one of enabled/disabled is allowed")


def test_keyserver_and_refresh_commands():
    """Fetching from a key server needs the network: the command it runs is asserted instead."""
    assert pkgrepo.keyserver_command("/tmp/k.gpg", "keyserver.ubuntu.com", ["0xABCD"]) == [
        "gpg", "--batch", "--no-default-keyring", "--keyring", "/tmp/k.gpg", "--keyserver",
        "keyserver.ubuntu.com", "--recv-keys", "0xABCD"]
    assert pkgrepo.refresh_command(None) == ["apt-get", "-q", "update"]
    assert pkgrepo.refresh_command("/etc/apt/sources.list.d/x.list")[3:] == [
        "-o", "Dir::Etc::sourcelist=/etc/apt/sources.list.d/x.list", "-o", "Dir::Etc::sourceparts=-",
        "-o", "APT::Get::List-Cleanup=0"]
