"""alternatives for real: a throwaway alternative (its link and two candidates under a temp dir),
removed from dpkg's alternatives database afterwards."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess

import pytest

from runtime.states import StateContext, alternatives

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("update-alternatives") is None
                                or not os.path.isdir("/etc/alternatives"),
                                reason="optional: needs root and update-alternatives")
RUN, TEST = StateContext(), StateContext(test=True)


@pytest.fixture
def alt(tmp_path):
    name = f"saltpan-test-{secrets.token_hex(4)}"
    paths = []
    for i in (1, 2):
        path = tmp_path / f"tool{i}"
        path.write_text(f"#!/bin/sh\necho {i}\n")
        path.chmod(0o755)
        paths.append(str(path))
    yield name, str(tmp_path / "link"), paths
    subprocess.run(["update-alternatives", "--remove-all", name], capture_output=True)
    assert not os.path.lexists(f"/etc/alternatives/{name}")


def test_install_set_auto_remove(alt):
    name, link, (one, two) = alt
    ret = alternatives.install(TEST, name, link, one, 10)
    assert ret["result"] is None and alternatives.query(name) is None
    ret = alternatives.install(RUN, name, link, one, 10)
    assert ret["changes"] == {"name": name, "link": link, "path": one, "priority": 10}
    assert ret["comment"] == f"Alternative for {name} set to path {one} with priority 10"
    assert os.path.realpath(link) == one
    assert alternatives.install(RUN, name, link, one, 10)["comment"] == (
        f"Alternative {one} for {name} is already registered")
    ret = alternatives.install(RUN, name, link, two, 5)
    assert ret["comment"] == f"Alternative {two} for {name} registered with priority 5, but not set as current"
    assert alternatives.set(TEST, name, two)["result"] is None and alternatives.current(name) == one
    assert alternatives.set(RUN, name, two)["changes"] == {"path": two}
    assert alternatives.set(RUN, name, two)["comment"] == f"Alternative for {name} already set to {two}"
    assert os.path.realpath(link) == two
    assert alternatives.auto(RUN, name)["comment"] == f"{name} put in auto mode"
    assert alternatives.current(name) == one and alternatives.auto(RUN, name)["changes"] == {}
    assert alternatives.remove(TEST, name, one)["result"] is None
    ret = alternatives.remove(RUN, name, one)
    assert ret["changes"] == {"path": two} and alternatives.current(name) == two
    assert alternatives.remove(RUN, name, one)["changes"] == {}
    assert alternatives.set(RUN, name, "/nonexistent")["result"] is False
