"""The state-module registry: one entry per module, its facts agreeing with the module itself."""

from __future__ import annotations

import importlib
import inspect

import pytest

from compiler.requisites import order_chunks
from runtime.executor import Executor
from runtime.states import REGISTRY, Missing, StateContext, has_mod_watch, resolve
from runtime.states.registry import runs_own_checks

IMPLEMENTED = [entry for entry in REGISTRY.values() if entry.impl]


@pytest.mark.parametrize("entry", IMPLEMENTED, ids=lambda e: e.name)
def test_registered_facts_match_the_module(entry):
    module = importlib.import_module(entry.impl)
    exported = set(module.__all__)
    assert exported, f"{entry.name} exports no state function"
    for fun in exported:
        func = getattr(module, fun)
        params = list(inspect.signature(func).parameters)
        assert params[:2] == ["ctx", "name"], f"{entry.name}.{fun} must take (ctx, name, ...)"
    assert ("mod_watch" in exported) == entry.mod_watch, entry.name
    assert has_mod_watch(entry.name) == entry.mod_watch
    assert runs_own_checks(entry.name) == entry.own_run_check


def test_salt_modules_with_mod_watch_keep_watch():
    # Salt 3008 modules with a mod_watch that saltpan implements
    for name in ("cmd", "test", "pkg", "service"):
        assert has_mod_watch(name), name
    for name in ("file", "user", "group", "nosuchmodule"):
        assert not has_mod_watch(name), name


def test_unknown_and_foreign_modules_give_salts_reason():
    assert resolve("nosuchmod", "fun") == Missing("'nosuchmod.fun' is not available.")
    assert resolve("file", "nosuchfun") == Missing("'file.nosuchfun' is not available.")
    assert resolve("file", "_private") == Missing("'file._private' is not available.")
    assert resolve("macpackage", "installed") == Missing(
        "'macpackage' __virtual__ returned False: Only supported on Mac OS")
    assert resolve("chocolatey", "installed") == Missing(
        "'chocolatey' __virtual__ returned False: chocolatey module could not be loaded")


def _run(chunks):
    lowstate, problems = order_chunks(chunks, has_mod_watch)
    assert not problems
    return Executor(lowstate, lambda low, test: StateContext(test=test)).apply()


def test_executor_reports_a_missing_state_as_salt_does():
    # Salt 3008.3 on Debian 12 (captured): result False, the Reason line, a final newline
    ret = _run([{"state": "macpackage", "fun": "installed", "name": "/tmp/x.pkg", "__id__": "a",
                 "__sls__": "s", "__env__": "base", "order": 1}])
    (only,) = ret.values()
    assert only["result"] is False
    assert only["comment"] == ("State 'macpackage.installed' was not found in SLS 's'\n"
                               "Reason: 'macpackage' __virtual__ returned False: Only supported on Mac OS\n")


def test_watch_on_a_module_without_mod_watch_becomes_require():
    chunks = [
        {"state": "test", "fun": "succeed_with_changes", "name": "a", "__id__": "a", "__sls__": "s",
         "__env__": "base", "order": 1},
        {"state": "file", "fun": "exists", "name": "/", "__id__": "b", "__sls__": "s", "__env__": "base",
         "order": 2, "watch": [{"test": "a"}]},
        {"state": "cmd", "fun": "wait", "name": "true", "__id__": "c", "__sls__": "s", "__env__": "base",
         "order": 3, "watch": [{"test": "a"}]},
    ]
    lowstate, problems = order_chunks(chunks, has_mod_watch)
    assert not problems
    by_id = {c["__id__"]: c for c in lowstate.chunks}
    assert by_id["b"]["require"] == [{"test": "a"}] and "watch" not in by_id["b"]
    assert by_id["c"]["watch"] == [{"test": "a"}]
