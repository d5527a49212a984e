"""A separate virtualenv holding real Salt, for the benchmarks to compare against.

It lives under ``bench/.work/saltvenv`` (gitignored) and is created with
``pip install salt==<SALT_VERSION>`` the first time a benchmark needs it.  Salt
is never a dependency of saltpan: only the benchmark helpers run inside it.

    python bench/salt_venv.py            # create when missing, print the venv's path
    python bench/salt_venv.py --python   # print its python instead
    python bench/salt_venv.py --recreate # start over

``SALTPAN_BENCH_SALT_VENV=/path/to/venv`` uses an existing venv instead (it must
be able to ``import salt``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

SALT_VERSION = "3008.3"  # the version bench-fleet's reference figures and the conformance corpus come from
BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_VENV = BENCH_DIR / ".work" / "saltvenv"


class SaltVenvError(RuntimeError):
    """The Salt venv could not be created or does not work."""


def venv_dir() -> Path:
    override = os.environ.get("SALTPAN_BENCH_SALT_VENV")
    return Path(override).resolve() if override else DEFAULT_VENV


def python_of(venv_path: Path) -> Path:
    return venv_path / "bin" / "python"


def salt_version(python: Path) -> str | None:
    """Salt's version as the venv's python reports it, or None when salt does not import."""
    if not python.exists():
        return None
    proc = subprocess.run([str(python), "-c", "import salt.version; print(salt.version.__version__)"],
                          capture_output=True, text=True, timeout=120)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ensure(recreate: bool = False, quiet: bool = False) -> Path:
    """The venv's directory; creates it and installs Salt when missing."""
    path = venv_dir()
    python = python_of(path)
    if os.environ.get("SALTPAN_BENCH_SALT_VENV"):
        if salt_version(python) is None:
            raise SaltVenvError(f"SALTPAN_BENCH_SALT_VENV={path}: {python} cannot import salt")
        return path
    if recreate and path.exists():
        shutil.rmtree(path)
    if salt_version(python) is not None:
        return path
    if not quiet:
        print(f"creating the Salt venv in {path} (pip install salt=={SALT_VERSION}) ...", file=sys.stderr)
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True).create(path)
    log = path.parent / "saltvenv-pip.log"
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run([str(python), "-m", "pip", "install", f"salt=={SALT_VERSION}"],
                              stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0 or salt_version(python) is None:
        raise SaltVenvError(f"pip install salt=={SALT_VERSION} into {path} failed; see {log}")
    return path


def salt_python() -> Path:
    """The python of the Salt venv (created when missing)."""
    return python_of(ensure(quiet=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="store_true", help="print the venv's python, not its directory")
    parser.add_argument("--recreate", action="store_true", help="delete and recreate the venv")
    args = parser.parse_args(argv)
    try:
        path = ensure(recreate=args.recreate)
    except SaltVenvError as exc:
        print(f"salt_venv: {exc}", file=sys.stderr)
        return 1
    print(python_of(path) if args.python else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
