"""docs/functions.md is generated from the one registry of execution functions (docs/gen_functions.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_functions", ROOT / "docs" / "gen_functions.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_functions_md_is_up_to_date() -> None:
    gen = _gen()
    assert (ROOT / "docs" / "functions.md").read_text(encoding="utf-8") == gen.render(), \
        "docs/functions.md is stale: run `python docs/gen_functions.py`"


def test_every_function_is_listed_with_its_offline_answer() -> None:
    from runtime import modules

    text = _gen().render()
    for name in modules.registry():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}(")), None)
        assert row is not None, f"{name} missing from docs/functions.md"
    assert "| `file.file_exists(path)` | reads the host | returns `False` |" in text
    assert "| `state.apply(" in text and "| job | not available |" in text
