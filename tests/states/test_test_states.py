"""The test state module (results in normal and test mode, mod_watch)."""

from __future__ import annotations

from runtime.states import lookup
from runtime.states import test as test_state

TESTING = {"testing": {"old": "Unchanged", "new": "Something pretended to change"}}


def test_results_match_salt(ctx, tctx):
    cases = {
        # fun: (kwargs, result, changed, test-mode result)
        "nop": ({"any_arg": "is_accepted"}, True, False, True),
        "succeed_without_changes": ({}, True, False, True),
        "succeed_with_changes": ({}, True, True, None),
        "fail_without_changes": ({}, False, False, False),
        "fail_with_changes": ({}, False, True, None),
    }
    for fun, (kwargs, result, changed, test_result) in cases.items():
        real = lookup("test", fun)(ctx, "n", **kwargs)
        dry = lookup("test", fun)(tctx, "n", **kwargs)
        assert (real["result"], bool(real["changes"])) == (result, changed), fun
        assert (dry["result"], bool(dry["changes"])) == (test_result, changed), fun
        if changed:
            assert real["changes"] == TESTING


def test_configurable_test_state(ctx, tctx):
    ret = test_state.configurable_test_state(ctx, "c", changes=True, result=True, comment="configured")
    assert (ret["result"], ret["changes"], ret["comment"]) == (True, TESTING, "configured")
    fail = test_state.configurable_test_state(ctx, "c", changes=False, result=False)
    assert (fail["result"], fail["changes"]) == (False, {})
    assert test_state.configurable_test_state(tctx, "c", changes=False, result=False)["result"] is True
    assert test_state.configurable_test_state(tctx, "c", changes=True, result=False)["result"] is None
    assert test_state.configurable_test_state(tctx, "c", changes=False, result=False,
                                              allow_test_mode_failure=True)["result"] is False
    assert test_state.configurable_test_state(ctx, "c", warnings="w")["warnings"] == ["w"]
    assert test_state.configurable_test_state(ctx, "c", changes="sometimes")["result"] is False


def test_show_notification_and_unknown(ctx):
    assert test_state.show_notification(ctx, "h", text="just a note") == {
        "name": "h", "changes": {}, "result": True, "comment": "just a note"}
    assert test_state.show_notification(ctx, "h")["result"] is False
    assert lookup("test", "no_such_function") is None
    assert lookup("test", "_pretend_change") is None


def test_mod_watch_lists_watched_changes(make_ctx):
    ctx = make_ctx(watch_changes=["test: changer"])
    ret = test_state.mod_watch(ctx, "w", sfun="succeed_without_changes")
    assert ret == {"name": "w", "result": True, "comment": "Watch statement fired.",
                   "changes": {"Requisites with changes": ["test: changer"]}}
    assert lookup("test", "mod_watch") is test_state.mod_watch


def test_check_pillar(make_ctx):
    ctx = make_ctx(pillar={"a": {"b": 1}, "s": "x"})
    assert test_state.check_pillar(ctx, "p", present=["a:b"], string="s")["result"] is True
    bad = test_state.check_pillar(ctx, "p", integer=["s"], present="missing")
    assert bad["result"] is False and "missing" in bad["comment"]
