"""Every execution function `saltpan call` lists has a test that calls it through `saltpan call`.

The tests of this directory call functions as ``minion.call("mod.fun", ...)`` or
``minion.error("mod.fun", ...)`` with the name written out; this test reads them (their syntax
tree) and fails for every function of the registry that no test calls, so a new function cannot
land without one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from runtime import modules

HERE = Path(__file__).resolve().parent


def called_functions(kinds: tuple[str, ...] = ("call", "error")) -> dict[str, set[str]]:
    """{function name: the test files calling it through minion.call / minion.error}."""
    found: dict[str, set[str]] = {}
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in kinds and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, set()).add(path.name)
    return found


def test_every_listed_function_is_called_through_saltpan_call() -> None:
    called = called_functions()
    missing = [name for name in modules.list_functions() if name not in called]
    assert not missing, f"{len(missing)} execution functions have no test through saltpan call: {', '.join(missing)}"


def test_the_tests_call_only_functions_that_exist() -> None:
    ours = {name for name in called_functions(("call",)) if name.split(".", 1)[0] in modules.MODULES}
    unknown = sorted(ours - set(modules.list_functions()))   # custom modules of the tests left aside
    assert not unknown, f"tests call functions the registry does not have: {unknown}"
