"""The project's import graph: no cycle among its modules, the CLI on top of the engine.

Every ``import`` statement of every module of compiler/, runtime/ and ext_pillar/ counts, those
inside functions (imported lazily, to start fast) and under ``TYPE_CHECKING`` too: a cycle
through a lazy import is still a cycle a reader has to untangle.  Rules:

* no import cycle (a strongly connected component of more than one module);
* no engine module imports a CLI module (``runtime.cli``): only ``python -m runtime`` does;
* ``compiler`` imports nothing from ``runtime`` (the pure layer, DESIGN.md).

Standard library only (``ast``): run ``python tests/unit/test_import_graph.py`` to print the
cycles and the forbidden imports.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("compiler", "runtime", "ext_pillar")
CLI = "runtime.cli"
CLI_ENTRY_POINTS = {"runtime.__main__"}   # `python -m runtime` is the command line


def project_modules(root: Path = REPO) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The project module ``name`` is, or lies in (``runtime.codec.pack`` -> ``runtime.codec``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The project modules ``module`` imports, wherever the statement is."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import submodule` imports the submodule; `from module import name` the module
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {module: imports_of(module, path, modules) for module, path in modules.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if in_package(target, CLI) and not in_package(module, CLI) and module not in CLI_ENTRY_POINTS:
                problems.append(f"{module} (engine) imports {target} (command line)")
            if in_package(module, "compiler") and in_package(target, "runtime"):
                problems.append(f"{module} (the pure compiler) imports {target} (runtime)")
    return problems


# ---------------------------------------------------------------- the tests

@functools.cache
def project_graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_import_cycle() -> None:
    found = cycles(project_graph())
    assert not found, "import cycles (break each by moving what both sides need into a module of its own):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_the_cli_sits_on_top_of_the_engine() -> None:
    problems = forbidden_imports(project_graph())
    assert not problems, "\n".join(problems)


def test_the_graph_sees_lazy_relative_and_package_imports(tmp_path: Path) -> None:
    for name, text in {
        "runtime/__init__.py": "",
        "runtime/a.py": "def f():\n    from runtime import b\n",
        "runtime/b.py": "from . import c\n",
        "runtime/c.py": "import runtime.a.thing\n",
        "runtime/cli/__init__.py": "",
        "runtime/cli/main.py": "from runtime import a\n",
        "runtime/d.py": "from runtime.cli.main import x\n",
        "compiler/__init__.py": "",
        "compiler/e.py": "from runtime.a import f\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["runtime.a"] == {"runtime.b"} and graph["runtime.b"] == {"runtime.c"}
    assert graph["runtime.c"] == {"runtime.a"}
    assert cycles(graph) == [["runtime.a", "runtime.b", "runtime.c"]]
    assert forbidden_imports(graph) == ["compiler.e (the pure compiler) imports runtime.a (runtime)",
                                        "runtime.d (engine) imports runtime.cli.main (command line)"]


if __name__ == "__main__":
    the_graph = import_graph()
    for cycle in cycles(the_graph):
        print("cycle:", " <-> ".join(cycle))
    for problem in forbidden_imports(the_graph):
        print(problem)
    sys.exit(1 if cycles(the_graph) or forbidden_imports(the_graph) else 0)
