"""CLI start-up stays lean: what `saltpan --version` and `saltpan run` import (issue 20).

These are import-set checks, not timings: a timing assertion would fail on a busy machine,
while an import that creeps back in is what makes start-up slow (bench/startup.py times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `python -c` with this prints the modules loaded, after the given statements ran
_MODULES = "import sys, json; {body}; sys.stdout.write('\\n' + json.dumps(sorted(sys.modules)))"


def _modules_after(body: str) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", _MODULES.format(body=body)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    head, _, last = proc.stdout.rpartition("\n")
    return head, set(json.loads(last))


def test_version_imports_nothing_beyond_the_entry_module() -> None:
    baseline = _modules_after("pass")[1]
    out, loaded = _modules_after("from runtime.cli.main import main; main(['--version'])")
    assert out.strip() == f"saltpan {_pyproject_version()}"
    # no argparse, no typing, no importlib.metadata scan, none of the commands' modules
    # beyond the entry module, two small pure-Python stdlib modules it needs at import (an editable
    # install's path finder may have loaded them already, in the baseline too)
    allowed = {"runtime", "runtime.cli", "runtime.cli.main", "__future__", "contextlib"}
    assert loaded - baseline <= allowed, sorted(loaded - baseline)


def test_version_string_is_the_distributions() -> None:
    from runtime.cli.main import VERSION

    assert VERSION == _pyproject_version()


@pytest.mark.parametrize("heavy", ["jinja2", "compiler", "sqlite3", "asyncio", "socket", "argparse",
                                   "importlib.metadata"])
def test_version_does_not_import(heavy: str) -> None:
    _, loaded = _modules_after("from runtime.cli.main import main; main(['--version'])")
    assert heavy not in loaded


def test_run_imports_only_the_client_side() -> None:
    """`saltpan run` (up to sending the job) needs the config, the client, the transport and
    its client proof (an HMAC); not the compiler, Jinja, the master's stores, asyncio, the
    execution modules, the cipher suite (``cryptography``), the request proxy's side of the
    transport, nor the parsers of the other commands."""
    body = ("from runtime.cli.main import main\n"
            "try:\n    main(['run', '-c', '/nonexistent/saltpan-test/master', '*', 'test.ping'])\n"
            "except SystemExit:\n    pass\n"
            "import runtime.client")  # what `run` imports once its config is read
    _, loaded = _modules_after(f"exec({body!r})")
    assert "runtime.client" in loaded
    heavy = {m for m in loaded if m.split(".")[0] in {"jinja2", "compiler", "sqlite3", "asyncio", "ssl",
                                                       "socket", "subprocess", "ext_pillar", "cryptography"}
             or m.startswith(("runtime.master", "runtime.minion", "runtime.modules", "runtime.states",
                              "importlib.metadata", "runtime.transport_", "runtime.crypt.aead",
                              "runtime.cli.compile", "runtime.cli.call", "runtime.cli.plane"))}
    assert not heavy, sorted(heavy)


def _pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])
