"""Execution functions through `saltpan call --local`, the way a user runs them.

``minion`` is a masterless minion of its own (config, state and pillar trees, cachedir, static
grains, all under a temp dir).  ``minion.call(FUN, *ARGS)`` runs ``saltpan call --local -c CONF
--out json FUN ARGS...`` (the console script's own entry point, in this process) and returns what
it printed for ``local``; ``minion.error(FUN, *ARGS)`` expects the call to fail and returns its
stderr.  tests/modules/test_coverage.py holds every function of the registry to a call here.
"""

from __future__ import annotations

import io
import json
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime.cli.main import main

GRAINS = {"roles": ["web", "db"], "ipv4": ["127.0.0.1", "10.1.2.3"], "ipv6": ["::1", "fd00::5"],
          "ip4_interfaces": {"lo": ["127.0.0.1"], "eth0": ["10.1.2.3"]},
          "ip6_interfaces": {"lo": ["::1"], "eth0": ["fd00::5"]}, "datacenter": "ams1"}


class Minion:
    def __init__(self, base: Path, **opts: Any):
        self.base = base
        self.states = base / "states"
        self.pillar = base / "pillar"
        self.cachedir = base / "cache"
        self.sandbox = base / "sandbox"
        for path in (self.states, self.pillar, self.sandbox):
            path.mkdir(parents=True, exist_ok=True)
        self.conf = base / "minion"
        self.opts: dict[str, Any] = {
            "id": "tester", "file_client": "local", "root_dir": str(base / "root"), "cachedir": str(self.cachedir),
            "file_roots": {"base": [str(self.states)]}, "pillar_roots": {"base": [str(self.pillar)]},
            "grains": {**GRAINS, "sandbox": str(self.sandbox)}, "log_level": "warning", **opts}
        self.write_conf()
        self.write("pillar", "top.sls", "base:\n  '*':\n    - data\n")
        self.write("pillar", "data.sls", "app:\n  port: 8080\n  users: [alice, bob]\n")
        self.last_stderr = ""

    def write_conf(self) -> None:
        self.conf.write_text(yaml.safe_dump(self.opts), encoding="utf-8")

    def write(self, tree: str, rel: str, text: str) -> Path:
        """Write a file of the state tree ("states") or the pillar tree ("pillar")."""
        path = (self.states if tree == "states" else self.pillar) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def _run(self, fun: str, args: tuple[Any, ...]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        argv = ["call", "--local", "-c", str(self.conf), "--out", "json", fun, *(str(a) for a in args)]
        with redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
        self.last_stderr = err.getvalue()
        return code, out.getvalue(), err.getvalue()

    def call(self, fun: str, *args: Any, rc: int = 0) -> Any:
        """What `saltpan call --local FUN ARGS --out json` returned for ``local`` (exit status rc)."""
        code, out, err = self._run(fun, args)
        assert code == rc, f"saltpan call {fun} {' '.join(map(str, args))} exited {code}:\n{out}\n{err}"
        return json.loads(out)["local"]

    def error(self, fun: str, *args: Any) -> str:
        """The one-line error of a call that must fail: exit status 1 when the function failed, 2 (a usage
        error, docs/cli.md) when there is no such function."""
        code, out, err = self._run(fun, args)
        expected = 2 if "is not available" in err else 1
        assert code == expected, f"saltpan call {fun} was expected to fail with {expected}:\n{out}\n{err}"
        assert err.startswith(f"Error running '{fun}'") or "is not available" in err, err
        return err


@pytest.fixture
def minion(tmp_path: Path) -> Minion:
    return Minion(tmp_path)
