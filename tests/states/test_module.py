"""module.run / module.wait, both syntaxes, through the run's real execution-function table.

Expected returns are Salt 3008.3's (captured with salt-call --local on the same calls)."""

from __future__ import annotations

import pytest

from compiler.requisites import order_chunks
from runtime import modules
from runtime.executor import Executor
from runtime.states import StateContext, has_mod_watch, module


@pytest.fixture
def functions(tmp_path):
    env = modules.ModuleEnv(opts={"id": "m1", "cachedir": str(tmp_path)}, grains={"id": "m1"}, pillar={})
    return modules.function_table(env)


def test_new_style(functions, tmp_path):
    run = StateContext(functions=functions)
    assert module.run(run, "n1", **{"test.echo": ["hello"]}) == {
        "name": ["test.echo"], "changes": {"test.echo": "hello"}, "result": True, "comment": "test.echo: hello"}
    ret = module.run(run, "n3", **{"test.arg": ["a", "b", {"x": 1}], "test.true": []})
    assert ret["changes"] == {"test.arg": {"args": ["a", "b"], "kwargs": {"x": 1}}, "test.true": True}
    assert ret["comment"] == "test.arg: Success, test.true: True" and ret["result"] is True
    marker = tmp_path / "ran"
    ret = module.run(run, "n2", **{"cmd.run_all": [{"cmd": f"touch {marker}; exit 3"}]})
    assert ret["result"] is False and marker.exists()  # retcode 3 is a failure
    ret = module.run(run, "n4", **{"nosuch.fun": []})
    assert (ret["result"], ret["comment"]) == (False, "Unavailable function: nosuch.fun.")


def test_new_style_test_mode_runs_nothing(functions, tmp_path):
    marker = tmp_path / "ran"
    ret = module.run(StateContext(test=True, functions=functions), "n", **{"cmd.run": [f"touch {marker}"]})
    assert ret == {"name": ["cmd.run"], "changes": {}, "result": None,
                   "comment": "Function cmd.run to be executed."}
    assert not marker.exists()


def test_legacy(functions, tmp_path):
    run = StateContext(functions=functions)
    assert module.run(run, "test.echo", text="hi") == {
        "name": "test.echo", "changes": {"ret": "hi"}, "result": True, "comment": "Module function test.echo executed"}
    assert module.run(run, "cmd.run", cmd="echo legacy")["changes"] == {"ret": "legacy"}
    ret = module.run(run, "test.echo")
    assert (ret["result"], ret["comment"]) == (False, "The following arguments are missing: text")
    ret = module.run(run, "test.arg", args=[1, 2], kwargs={"k": "v"})
    assert ret["changes"] == {"ret": {"args": [1, 2], "kwargs": {"k": "v"}}}
    ret = module.run(run, "nosuch.fun")
    assert (ret["result"], ret["comment"]) == (False, "Module function nosuch.fun is not available")
    ret = module.run(run, "cmd.retcode", cmd="exit 2")
    assert ret["result"] is True and ret["changes"] == {"ret": 2}  # an int is not a failure to Salt
    marker = tmp_path / "ran"
    ret = module.run(StateContext(test=True, functions=functions), "cmd.run", cmd=f"touch {marker}")
    assert (ret["result"], ret["comment"]) == (None, "Module function cmd.run is set to execute")
    assert not marker.exists()


def test_m_name_stands_for_the_functions_name_argument():
    calls = []

    def reload(name, sig=None):
        calls.append((name, sig))
        return True

    ret = module.run(StateContext(functions={"service.reload": reload}), "service.reload", m_name="postgresql")
    assert ret["result"] is True and calls == [("postgresql", None)]


def test_result_of_reads_nested_failures():
    assert module.result_of({"a": {"result": False}}) is False
    assert module.result_of({"retcode": 1}) is False
    assert module.result_of({"retcode": 0, "x": {"y": 1}}) is True
    assert module.result_of(False) is False and module.result_of("text") is True


@pytest.mark.parametrize("test", [True, False])
def test_wait_runs_only_through_a_watch(functions, tmp_path, test):
    marker = tmp_path / "ran"
    chunks = [
        {"state": "test", "fun": "succeed_with_changes", "name": "t1", "__id__": "t1", "__sls__": "s",
         "__env__": "base", "order": 1},
        {"state": "module", "fun": "wait", "name": "cmd.run", "cmd": f"touch {marker}", "__id__": "w", "__sls__": "s",
         "__env__": "base", "order": 2, "watch": [{"test": "t1"}]},
        {"state": "module", "fun": "wait", "name": "cmd.run", "cmd": f"touch {marker}-no", "__id__": "idle",
         "__sls__": "s", "__env__": "base", "order": 3},
        {"state": "module", "fun": "wait", "name": "w3", "test.echo": ["watched"], "__id__": "w3", "__sls__": "s",
         "__env__": "base", "order": 4, "watch": [{"test": "t1"}]},
    ]
    lowstate, problems = order_chunks(chunks, has_mod_watch)
    assert not problems
    out = Executor(lowstate, lambda low, t: StateContext(test=t, functions=functions), test=test).apply()
    watched = out["module_|-w_|-cmd.run_|-wait"]
    idle = out["module_|-idle_|-cmd.run_|-wait"]
    new_style = out["module_|-w3_|-w3_|-wait"]
    assert (idle["result"], idle["changes"], idle["comment"]) == (True, {}, "")
    assert not (tmp_path / "ran-no").exists()
    if test:
        assert (watched["result"], watched["comment"]) == (None, "Module function cmd.run is set to execute")
        assert (new_style["result"], new_style["comment"]) == (None, "Function test.echo to be executed.")
        assert not marker.exists()
    else:
        assert (watched["result"], watched["changes"]) == (True, {"ret": ""})
        assert new_style["changes"] == {"test.echo": "watched"}
        assert marker.exists()
