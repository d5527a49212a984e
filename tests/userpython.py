"""Run saltpan as an unprivileged local user (publisher_acl tests).

The user must be able to execute a Python interpreter and read saltpan and its
dependencies.  This venv usually lives where such a user cannot go (a clone under a
0700 temp dir, a Python under /root), so when neither this venv's Python nor a system
Python of the same version with our paths works, the packages are copied into a
world-readable staging directory (removed when the test process exits) and a system
Python of the same version is used with it.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = "import zmq, msgpack, cryptography, yaml, jinja2, runtime.client"
# what a client run needs from site-packages is small; copying the rest (pip, pytest ...) is waste
_SKIP = ("pip", "setuptools", "_pytest", "pytest", "pygments", "psycopg", "hypothesis", "ruff", "pyinstrument",
         "_distutils_hack", "pluggy", "iniconfig", "xdist", "execnet", "__editable__")
_cache: dict[str, tuple[str, str]] = {}


def run_as(user: str, argv: list[str], pythonpath: str, timeout: float = 60,
           env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    entry = pwd.getpwnam(user)
    child_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "HOME": "/", "LANG": "C.UTF-8",
                 **(env or {})}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd="/", env=child_env,
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])


def _works(user: str, python: str, path: str) -> bool:
    try:
        return run_as(user, [python, "-c", PROBE], path, 60).returncode == 0
    except OSError:
        return False


def _stage() -> str:
    stage = tempfile.mkdtemp(prefix="saltpan-userpy-", dir="/tmp")
    atexit.register(shutil.rmtree, stage, True)
    for package in ("compiler", "runtime", "ext_pillar"):
        shutil.copytree(REPO / package, Path(stage) / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if entry.name.startswith(_SKIP) or entry.name.endswith((".dist-info", ".pth")):
            continue
        target = Path(stage) / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(entry, target)
    for cur, _dirs, files in os.walk(stage):
        os.chmod(cur, 0o755)
        for name in files:
            path = os.path.join(cur, name)
            os.chmod(path, os.stat(path).st_mode | 0o444)
    return stage


def python_for(user: str) -> tuple[str, str] | None:
    """(interpreter, PYTHONPATH) that `user` can run saltpan with, or None when this host has no
    Python of our version that the user may execute."""
    if user in _cache:
        return _cache[user]
    site = sysconfig.get_paths()["purelib"]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = [p for p in (f"/usr/bin/{version}", f"/usr/local/bin/{version}") if os.path.exists(p)]
    candidates = [(sys.executable, str(REPO))] + [(p, f"{REPO}:{site}") for p in system]
    for python, path in candidates:
        if _works(user, python, path):
            _cache[user] = (python, path)
            return _cache[user]
    if not system:
        return None
    stage = _stage()
    for python in system:
        if _works(user, python, stage):
            _cache[user] = (python, stage)
            return _cache[user]
    return None
