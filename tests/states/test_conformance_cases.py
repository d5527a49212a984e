"""The state functions against the conformance corpus, for cases without requisites.

Cases 057, 059, 061 and 063 only need their states run in file order, so they check the
state modules on their own (result, changes keys, and the sandbox manifest after
``state.apply`` and ``state.apply test=True``), before the executor exists. Requisites,
ordering and the run_num are the executor's business and are checked by the full corpus.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any

import pytest
from statehelpers import state_calls

CONFORMANCE = "/work/shared/conformance"
CASES = ["057-file-managed-contents", "059-file-managed-source-template", "061-file-replace-append",
         "063-test-states"]

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(CONFORMANCE, "cases")),
                                reason="conformance corpus not available")


def _oracle():
    if CONFORMANCE not in sys.path:
        sys.path.insert(0, CONFORMANCE)
    import oracle_lib

    return oracle_lib


def _context(ws, opts: dict[str, Any], test: bool):
    from compiler.jinja_env import make_environment
    from compiler.roots import LocalRoots
    from runtime.pipeline import pillar_compiler
    from runtime.states import StateContext

    grains = dict(opts.get("grains") or {})
    grains["id"] = opts["id"]
    pillar = pillar_compiler(opts).compile(opts["id"], grains).pillar
    roots = LocalRoots(opts["file_roots"])
    env = make_environment(roots, "base")

    def fetch(url: str, saltenv: str):
        found = roots.get(saltenv, url[len("salt://"):])
        if found is None:
            return None
        with open(found.display, "rb") as handle:  # LocalRoots: display is the real path
            return handle.read(), found.display, stat.S_IMODE(os.stat(found.display).st_mode)

    def render(text: str, engine: str, context: dict[str, Any], display: str) -> str:
        out = env.from_string(text).render({"grains": grains, "pillar": pillar, "opts": opts, **context})
        # Salt's Jinja renderer keeps a template's final newline (jinja2 drops it)
        return out + "\n" if text.endswith("\n") and not out.endswith("\n") else out

    return StateContext(test=test, opts=opts, grains=grains, pillar=pillar, fetch_file=fetch,
                        render_template=render), env, roots


def _apply(case: str, test: bool) -> tuple[dict[str, Any], list]:
    from compiler import yamlload
    from runtime import config
    from runtime.states import lookup

    oracle = _oracle()
    case_dir, _case, raw_config = oracle.load_case(case)
    ws = oracle.Workspace(case_dir, raw_config)
    try:
        opts = config.load(ws.config_path)
        ctx, env, roots = _context(ws, opts, test)
        top = yamlload.safe_load(roots.get("base", "top.sls").text)
        results: dict[str, Any] = {}
        run_num = 0
        for sls in top["base"]["*"]:
            text = roots.get("base", f"{sls}.sls").text
            high = yamlload.safe_load(env.from_string(text).render(grains=ctx.grains, pillar=ctx.pillar))
            for state_id, mod, fun, name, kwargs in state_calls(high):
                func = lookup(mod, fun)
                ret = func(ctx, name, **kwargs) if func else {"name": name, "result": False, "changes": {}}
                tag = oracle.replace_paths(f"{mod}_|-{state_id}_|-{name}_|-{fun}", ws.replacements())
                entry = {"__run_num__": run_num, "changed": bool(ret["changes"]),
                         "changes_keys": sorted(ret["changes"]), "name": oracle.replace_paths(
                             ret["name"], ws.replacements()), "result": ret["result"]}
                if func:
                    entry.update({"__id__": state_id, "__sls__": sls})
                results[tag] = entry
                run_num += 1
        return results, oracle.fs_manifest(ws.sandbox, ws.replacements())
    finally:
        ws.cleanup()


def _expected(case: str, name: str) -> Any:
    with open(os.path.join(CONFORMANCE, "cases", case, "expected", f"{name}.json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("test", [False, True], ids=["apply", "apply_test"])
def test_case(case: str, test: bool) -> None:
    check = "apply_test" if test else "apply"
    results, files = _apply(case, test)
    assert results == _expected(case, check)
    assert files == _expected(case, f"{check}_fs")
