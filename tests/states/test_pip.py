"""pip.installed / pip.removed for real: a fresh virtualenv (bin_env) and a wheel built here,
installed from a local directory with no index (no network). Results as Salt 3008.3's (captured
with the same venv and wheel)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile

import pytest

from runtime.states import StateContext, pip

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

RUN, TEST = StateContext(), StateContext(test=True)


def _wheel(directory, version: str) -> None:
    name = "saltpan_testpkg"
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
             f"{name}-{version}.dist-info/METADATA":
                 f"Metadata-Version: 2.1\nName: saltpan-testpkg\nVersion: {version}\n".encode(),
             f"{name}-{version}.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\nGenerator: saltpan-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for path, data in files.items()]
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join([*record, f"{name}-{version}.dist-info/RECORD,,"])
                                                   + "\n").encode()
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)


@pytest.fixture
def venv(tmp_path):
    target = tmp_path / "venv"
    proc = subprocess.run([sys.executable, "-m", "venv", str(target)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"optional: cannot create a virtualenv here: {proc.stderr.strip()[:200]}")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "1.0")
    return str(target), str(wheels)


def test_installed_and_removed_in_a_virtualenv(venv):
    bin_env, wheels = venv
    args = {"bin_env": bin_env, "no_index": True, "find_links": wheels}
    ret = pip.installed(TEST, "saltpan-testpkg", **args)
    assert ret == {"name": "saltpan-testpkg", "changes": {}, "result": None,
                   "comment": "Python package saltpan-testpkg is set to be installed"}
    ret = pip.installed(RUN, "saltpan-testpkg", **args)
    assert ret == {"name": "saltpan-testpkg", "changes": {"saltpan-testpkg==1.0": "Installed"}, "result": True,
                   "comment": "All packages were successfully installed"}
    again = pip.installed(RUN, "saltpan_testpkg==1.0", **args)
    assert (again["changes"], again["comment"]) == ({}, "Python package saltpan_testpkg==1.0 was already installed\n"
                                                        "All specified packages are already installed")
    ret = pip.installed(RUN, "saltpan-testpkg>=2", **args)
    assert ret["result"] is False and ret["comment"].startswith("Failed to install packages: saltpan-testpkg>=2.")
    assert pip.removed(TEST, "saltpan-testpkg", bin_env=bin_env)["comment"] == (
        "Package saltpan-testpkg is set to be removed")
    assert pip.removed(RUN, "saltpan-testpkg", bin_env=bin_env) == {
        "name": "saltpan-testpkg", "changes": {"saltpan-testpkg": "Removed"}, "result": True,
        "comment": "Package was successfully removed."}
    assert pip.removed(RUN, "saltpan-testpkg", bin_env=bin_env)["comment"] == "Package is not installed."


def test_specifiers_and_bad_input(tmp_path):
    assert pip.satisfied("Foo_Bar>=1,<2", {"foo-bar": "1.5"})
    assert not pip.satisfied("foo==2", {"foo": "1.5"})
    assert not pip.satisfied("foo", {})
    assert pip.installed(RUN, "x", bin_env=str(tmp_path / "nope"))["comment"].startswith("Could not find a pip binary")
