"""Running `saltpan compile` in-process for the fleet tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime.cli.main import main


def compile_cli(capsys: Any, root: Path, *argv: str) -> tuple[int, str, str]:
    """`saltpan compile -c root/saltpan.conf --fleet root/fleet.yaml ARGV...` -> (exit status, stdout, stderr)."""
    try:
        code = main(["compile", "--config", str(root / "saltpan.conf"), "--fleet", str(root / "fleet.yaml"), *argv])
    except SystemExit as exc:   # the parser's own usage errors (a bad option value): exit 2 from the shell
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def compile_json(capsys: Any, root: Path, *argv: str) -> Any:
    code, out, err = compile_cli(capsys, root, *argv, "--out", "json")
    assert code == 0, err
    return json.loads(out)


def read_dir(path: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(path.iterdir())}
