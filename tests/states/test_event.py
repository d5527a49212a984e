"""event.send / event.wait / mod_watch: the events reach the run's fire_event (the minion's bus)."""

from __future__ import annotations

from compiler.requisites import order_chunks
from runtime.executor import Executor
from runtime.states import StateContext, event, has_mod_watch


def test_send_and_test_mode():
    fired: list[tuple[str, dict]] = []
    run = StateContext(fire_event=lambda tag, data: fired.append((tag, dict(data))), grains={"id": "m1", "os": "x"})
    ret = event.send(StateContext(test=True), "app/deployed", data={"v": 1})
    assert ret == {"name": "app/deployed", "changes": {"tag": "app/deployed", "data": {"v": 1}}, "result": None,
                   "comment": "Event would have been fired"}
    ret = event.send(run, "app/deployed", data={"v": 1}, with_grains=["id"], preload={"p": 0})
    assert (ret["result"], ret["comment"]) == (True, "Event fired")
    assert fired == [("app/deployed", {"p": 0, "grains": {"id": "m1"}, "v": 1})]
    assert event.send(StateContext(), "t")["comment"].startswith("Event fired (this run has no event bus")


def test_wait_fires_only_when_a_watched_state_changed():
    fired: list[str] = []
    chunks = [
        {"state": "test", "fun": "succeed_with_changes", "name": "c", "__id__": "c", "__sls__": "s",
         "__env__": "base", "order": 1},
        {"state": "test", "fun": "succeed_without_changes", "name": "u", "__id__": "u", "__sls__": "s",
         "__env__": "base", "order": 2},
        {"state": "event", "fun": "wait", "name": "on/change", "__id__": "w1", "__sls__": "s", "__env__": "base",
         "order": 3, "watch": [{"test": "c"}]},
        {"state": "event", "fun": "wait", "name": "on/nochange", "__id__": "w2", "__sls__": "s",
         "__env__": "base", "order": 4, "watch": [{"test": "u"}]},
    ]
    lowstate, problems = order_chunks(chunks, has_mod_watch)
    assert not problems
    out = Executor(lowstate, lambda low, t: StateContext(test=t, fire_event=lambda tag, d: fired.append(tag))).apply()
    assert fired == ["on/change"]
    assert out["event_|-w1_|-on/change_|-wait"]["comment"] == "Event fired"
    assert out["event_|-w2_|-on/nochange_|-wait"]["changes"] == {}
