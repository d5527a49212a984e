"""Every render-time function, filter, test and Jinja global against real Salt 3008.3.

tests/unit/render_capture/cases.yaml holds one Jinja template per case; salt_3008.3.json holds what
real Salt rendered for it (tools/capture_salt_render.py, run with a Salt venv's python).  Here saltpan
renders the same template the way an sls's jinja step does, with the offline function table of
`saltpan compile`: the cases that call host-reading functions ask about things that do not exist,
so Salt's captured answer is exactly what the offline rule must give.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.errors import CompileError
from compiler.render import Renderer, template_vars
from compiler.roots import LocalRoots
from compiler.salt_functions import SaltFunctions
from runtime.modules import offline_functions

HERE = Path(__file__).resolve().parent / "render_capture"
CASES = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))
CAPTURED = json.loads((HERE / "salt_3008.3.json").read_text(encoding="utf-8"))["cases"]


def render(case: dict[str, Any], tmp_path: Path) -> str:
    """Render one case with saltpan as the jinja step of an sls render (raises CompileError)."""
    defaults = CASES["defaults"]
    states = tmp_path / "states"
    for rel, text in (case.get("files") or {}).items():
        path = states / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sls = case.get("sls", "capture")
    rel = sls.replace(".", "/") + ".sls"
    (states / rel).parent.mkdir(parents=True, exist_ok=True)
    (states / rel).write_text(case["template"], encoding="utf-8")
    roots = LocalRoots({"base": [str(states)]})
    grains = dict(defaults["grains"], **(case.get("grains") or {}))
    pillar = case["pillar"] if "pillar" in case else defaults["pillar"]
    opts = {"id": defaults["id"], "file_client": "local", "file_roots": {"base": [str(states)]},
            **(case.get("opts") or {})}
    functions = offline_functions(roots, LocalRoots({}))
    source_file = roots.get("base", rel)
    assert source_file is not None
    context = {"grains": grains, "pillar": pillar, "opts": opts, "saltenv": "base",
               "salt": SaltFunctions(functions(defaults["id"], grains, pillar, opts))}
    context.update(template_vars(source_file, sls))
    return Renderer(roots).render(source_file, context, pipe=["jinja"]).data


def _params() -> list:
    return [pytest.param(case, id=case["id"]) for case in CASES["cases"]]


@pytest.mark.parametrize("case", _params())
def test_renders_as_salt(case: dict[str, Any], tmp_path: Path) -> None:
    expected = CAPTURED.get(case["id"])
    assert expected is not None, f"no capture for {case['id']}: run tools/capture_salt_render.py"
    if "error" in expected:
        with pytest.raises(CompileError) as failed:
            render(case, tmp_path)
        assert failed.value.file and failed.value.line, f"error without file:line: {failed.value}"
        return
    assert render(case, tmp_path) == expected["out"]


def test_every_case_is_captured() -> None:
    ids = [case["id"] for case in CASES["cases"]]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    assert sorted(ids) == sorted(CAPTURED), "cases.yaml and salt_3008.3.json disagree: recapture"


@pytest.mark.skipif(not os.path.exists("/work/saltvenv/bin/python"), reason="optional: no Salt venv to re-capture")
def test_capture_is_current() -> None:
    """Where the Salt venv exists, the stored capture is what Salt renders now."""
    import subprocess

    tool = Path(__file__).resolve().parents[2] / "tools" / "capture_salt_render.py"
    done = subprocess.run(["/work/saltvenv/bin/python", str(tool), "--check"], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
