"""Small builders shared by the unit tests: write a tree, compile its pillar."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.pillar import PillarCompiler, PillarResult
from compiler.roots import LocalRoots
from runtime.modules import offline_functions


def write_tree(root: Path | str, files: Mapping[str, str]) -> Path:
    """Write {relative path: text} under root (text is dedented); returns root."""
    root = Path(root)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def compile_pillar(root: Path | str, files: Mapping[str, str] | None = None, minion_id: str = "web01",
                   grains: Mapping[str, Any] | None = None, envs: Mapping[str, list[str]] | None = None,
                   drivers: Any = None, **opts: Any) -> PillarResult:
    """Compile the pillar of one minion from a tree written under root/pillar (or from envs)."""
    root = Path(root)
    if files is not None:
        write_tree(root / "pillar", files)
    roots = {env: [os.path.join(root, d) for d in dirs] for env, dirs in (envs or {"base": ["pillar"]}).items()}
    all_opts = {"pillar_roots": roots, "id": minion_id, **opts}
    # the template `salt` table of an offline compile, from the one registry (as runtime.pipeline)
    functions = offline_functions(LocalRoots(all_opts.get("file_roots") or {}), LocalRoots(roots))
    compiler = PillarCompiler(all_opts, LocalRoots(roots), drivers, functions=functions)
    return compiler.compile(minion_id, {"id": minion_id, **(grains or {})})


def pillar_of(root: Path | str, files: Mapping[str, str] | None = None, **kwargs: Any) -> dict:
    """The compiled pillar, asserting that nothing went wrong."""
    result = compile_pillar(root, files, **kwargs)
    assert not result.errors, [str(e) for e in result.errors]
    assert "_errors" not in result.pillar
    return result.pillar
