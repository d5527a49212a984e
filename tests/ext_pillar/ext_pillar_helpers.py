"""Helpers shared by the ext_pillar tests: opts over a temp tree, and one-call compiles."""

from __future__ import annotations

from typing import Any

from compiler.pillar import PillarCompiler, PillarResult
from compiler.roots import LocalRoots
from runtime import config as config_mod
from runtime.ext_loader import DriverLoader


def make_opts(tmp_path: Any, role: str = "minion", **overrides: Any) -> dict[str, Any]:
    """Minion opts over an empty pillar tree in tmp_path/pillar (unless pillar_roots is given)."""
    pillar_dir = tmp_path / "pillar"
    pillar_dir.mkdir(exist_ok=True)
    opts = config_mod.defaults(role)
    opts["pillar_roots"] = {"base": [str(pillar_dir)]}
    opts.update(overrides)
    return opts


def write_tree(root: Any, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def compile_pillar(opts: dict[str, Any], minion_id: str = "web01", grains: dict | None = None,
                   loader: DriverLoader | None = None, **kwargs: Any) -> PillarResult:
    loader = loader or DriverLoader(opts)
    compiler = PillarCompiler(opts, LocalRoots(opts.get("pillar_roots") or {}), loader)
    return compiler.compile(minion_id, grains or {"id": minion_id}, **kwargs)
