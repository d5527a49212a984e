"""at states for real: jobs queued far in the future with a unique tag and removed afterwards (the
at daemon need not run: queueing and listing work without it). Results as Salt 3008's."""

from __future__ import annotations

import secrets
import shutil
import subprocess

import pytest

from compiler.requisites import order_chunks
from runtime.executor import Executor
from runtime.states import StateContext, at, has_mod_watch

pytestmark = pytest.mark.skipif(shutil.which("at") is None or shutil.which("atq") is None,
                                reason="optional: needs at/atq (the at package, tools/test-packages.sh)")
RUN, TEST = StateContext(), StateContext(test=True)
WHEN = "23:59 Dec 31 2037"


@pytest.fixture
def tag():
    value = f"saltpan{secrets.token_hex(4)}"
    yield value
    for job in at.jobs(value):
        subprocess.run(["atrm", str(job["job"])], capture_output=True)


def test_present_unique_and_absent(tag):
    ret = at.present(TEST, "echo hi", WHEN, tag=tag)
    assert (ret["result"], ret["comment"]) == (None, f"job echo hi added and will run on {WHEN}")
    assert at.jobs(tag) == []
    ret = at.present(RUN, "echo hi", WHEN, tag=tag, unique_tag=True)
    assert ret["result"] is True and ret["comment"] == f"job echo hi added and will run on {WHEN}"
    assert ret["changes"]["tag"] == tag and ret["changes"]["date"] == "2037-12-31" and ret["changes"]["time"] == "23:59:00"
    again = at.present(RUN, "echo hi", WHEN, tag=tag, unique_tag=True)
    assert (again["changes"], again["comment"]) == ({}, f"atleast one job with tag {tag} exists.")
    assert at.present(RUN, "echo hi", "not a time at all", tag=tag)["result"] is False
    assert at.absent(TEST, "x", tag=tag)["comment"] == "removed ? job(s)"
    ret = at.absent(RUN, "x", tag=tag)
    assert ret["comment"] == "removed 1 job(s)" and len(ret["changes"]["removed"]) == 1
    assert at.jobs(tag) == [] and at.absent(RUN, "x", tag=tag)["comment"] == "removed 0 job(s)"


def test_watch_queues_through_mod_watch(tag):
    chunks = [
        {"state": "test", "fun": "succeed_with_changes", "name": "c", "__id__": "c", "__sls__": "s",
         "__env__": "base", "order": 1},
        {"state": "at", "fun": "watch", "name": "echo watched", "timespec": WHEN, "tag": tag, "__id__": "w",
         "__sls__": "s", "__env__": "base", "order": 2, "watch": [{"test": "c"}]},
    ]
    lowstate, problems = order_chunks(chunks, has_mod_watch)
    assert not problems
    out = Executor(lowstate, lambda low, t: StateContext(test=t)).apply()
    assert out["at_|-w_|-echo watched_|-watch"]["comment"] == f"job echo watched added and will run on {WHEN}"
    assert len(at.jobs(tag)) == 1
