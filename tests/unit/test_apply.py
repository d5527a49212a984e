"""Applying states masterless: dependants of a failure are skipped (and only they), test mode
touches nothing, and the shipped tree converges (a second apply changes nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.unit.helpers import write_tree

REPO = Path(__file__).resolve().parents[2]


def call(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime", "call", "--config", str(config), "--local", *args,
                           "--out", "json"], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def minion_config(tmp_path: Path, grains: dict, pillar_roots: str, file_roots: str) -> Path:
    conf = {"id": grains.get("id", "web01"), "file_client": "local", "grains": grains,
            "pillar_roots": {"base": [pillar_roots]}, "file_roots": {"base": [file_roots]},
            "root_dir": str(tmp_path / "root"), "cachedir": str(tmp_path / "cache")}
    path = tmp_path / "minion.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


def manifest(root: Path) -> dict[str, tuple]:
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                            path.read_bytes() if path.is_file() and not path.is_symlink() else None)
    return out


def test_failure_skips_exactly_its_dependants(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    write_tree(tmp_path / "states", {
        "top.sls": "base:\n  '*':\n    - chain\n",
        "chain.sls": f"""
            broken:
              test.fail_without_changes: []
            needs_broken:
              file.managed:
                - name: {sandbox}/needs_broken
                - contents: x
                - require:
                  - test: broken
            needs_needs_broken:
              file.managed:
                - name: {sandbox}/second_level
                - contents: x
                - require:
                  - file: needs_broken
            independent:
              file.managed:
                - name: {sandbox}/independent
                - contents: y
            on_failure:
              file.managed:
                - name: {sandbox}/on_failure
                - contents: z
                - onfail:
                  - test: broken
            """})
    (tmp_path / "pillar").mkdir()
    config = minion_config(tmp_path, {"id": "web01"}, str(tmp_path / "pillar"), str(tmp_path / "states"))
    proc = call(config, "state.apply", "--retcode-passthrough")
    assert proc.returncode == 2, proc.stderr   # a failed state, as salt-call --retcode-passthrough
    assert call(config, "state.apply").returncode == 1   # salt-call without it: 1 for any failure
    results = {v["__id__"]: v for v in json.loads(proc.stdout)["local"].values()}
    assert results["broken"]["result"] is False
    assert results["needs_broken"]["result"] is False
    assert "One or more requisite failed: chain.broken" in results["needs_broken"]["comment"]
    assert results["needs_needs_broken"]["result"] is False
    assert results["independent"]["result"] is True
    assert results["on_failure"]["result"] is True
    assert sorted(p.name for p in sandbox.iterdir()) == ["independent", "on_failure"]


def shipped_config(tmp_path: Path) -> Path:
    fleet = yaml.safe_load((REPO / "demo" / "fleet.yaml").read_text())
    grains = dict(fleet["web01"], id="web01", sandbox=str(tmp_path / "sandbox"))
    return minion_config(tmp_path, grains, str(REPO / "pillar_roots"), str(REPO / "state_roots"))


def test_shipped_tree_test_mode_touches_nothing_then_converges(tmp_path: Path) -> None:
    config = shipped_config(tmp_path)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    before = manifest(sandbox)
    dry = call(config, "state.apply", "test=True")
    assert dry.returncode == 0, dry.stderr
    dry_results = json.loads(dry.stdout)["local"]
    assert any(r["result"] is None for r in dry_results.values()), "test mode predicts changes"
    assert manifest(sandbox) == before
    first = call(config, "state.apply")
    assert first.returncode == 0, first.stdout + first.stderr
    first_results = json.loads(first.stdout)["local"]
    assert all(r["result"] is True for r in first_results.values())
    assert any(r["changes"] for r in first_results.values())
    assert set(first_results) == set(dry_results)
    second = call(config, "state.apply")
    assert second.returncode == 0
    second_results = json.loads(second.stdout)["local"]
    changed = {k: v["changes"] for k, v in second_results.items() if v["changes"]}
    assert changed == {}, changed
