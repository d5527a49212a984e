"""State compiler: which environments are available (env_order) and how errors add up."""

from __future__ import annotations

import os
from pathlib import Path

from runtime.pipeline import compile_states
from tests.unit.helpers import write_tree


def _opts(root: Path, envs: list[str], **extra) -> dict:
    roots = {env: [os.path.join(root, env)] for env in envs}
    return {"file_roots": roots, "id": "web01", **extra}


def test_env_order_leaving_out_an_env_makes_it_unavailable(tmp_path) -> None:
    write_tree(tmp_path, {
        "base/top.sls": "base:\n  '*':\n    - common\nqa:\n  '*':\n    - qaapp\n",
        "base/common.sls": "common:\n  test.nop: []\n",
        "qa/qaapp.sls": "qaapp:\n  test.nop: []\n",
    })
    opts = _opts(tmp_path, ["base", "qa"], env_order=["base"])
    top = compile_states(opts, "web01", {}, {}, "top")
    assert top.data == {"base": ["common"], "qa": ["qaapp"]}
    high = compile_states(opts, "web01", {}, {}, "highstate")
    (err,) = high.errors
    assert err.message == "No matching salt environment for environment 'qa' found"
    assert err.file == os.path.join(tmp_path, "base", "top.sls")
    # listed in env_order, qa is available again
    ok = compile_states(_opts(tmp_path, ["base", "qa"], env_order=["base", "qa"]), "web01", {}, {}, "highstate")
    assert ok.errors == [] and set(ok.data) == {"common", "qaapp"}


def test_include_of_an_env_left_out_of_env_order(tmp_path) -> None:
    write_tree(tmp_path, {
        "base/top.sls": "base:\n  '*':\n    - main\n",
        "base/main.sls": "include:\n  - qa: lib\nmain:\n  test.nop: []\n",
        "qa/lib.sls": "lib:\n  test.nop: []\n",
    })
    result = compile_states(_opts(tmp_path, ["base", "qa"], env_order=["base"]), "web01", {}, {}, "highstate")
    assert [e.message for e in result.errors] == ["Nonexistent saltenv 'qa' found in include of 'lib' within SLS "
                                                  "'base:main'"]


def test_show_lowstate_adds_extend_errors_to_render_errors(tmp_path) -> None:
    write_tree(tmp_path, {
        "base/top.sls": "base:\n  '*':\n    - present\n    - not_there\n",
        "base/present.sls": "extend:\n  ghost:\n    test.nop:\n      - x: 1\npresent:\n  test.nop: []\n",
    })
    opts = _opts(tmp_path, ["base"])
    applied = compile_states(opts, "web01", {}, {}, "lowstate")
    assert [e.message for e in applied.errors] == ["No matching sls found for 'not_there' in env 'base'"]
    shown = compile_states(opts, "web01", {}, {}, "lowstate", all_errors=True)
    assert [e.message for e in shown.errors][0] == "No matching sls found for 'not_there' in env 'base'"
    assert shown.errors[1].message.startswith("Cannot extend ID 'ghost' in 'base:present'")
    assert len(shown.errors) == 2
