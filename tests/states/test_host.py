"""host.present/absent/only on a hosts file in the sandbox (the ``hosts.file`` option, as Salt's);
Salt parity of the results: parity_scenarios.yaml "host"."""

from __future__ import annotations

import os

from statehelpers import read, write

from runtime.states import host


def test_host_states_for_real(make_ctx, sandbox):
    path = write(os.path.join(sandbox, "hosts"), "# keep\n127.0.0.1 localhost\n", 0o644)
    run = make_ctx(opts={"hosts.file": path})
    test = make_ctx(test=True, opts={"hosts.file": path})
    ret = host.present(test, "web1", ip=["10.0.0.7"], comment="app")
    assert ret["result"] is None and read(path) == "# keep\n127.0.0.1 localhost\n"
    ret = host.present(run, "web1", ip=["10.0.0.7"], comment="app")
    assert ret["changes"] == {"added": {"10.0.0.7": ["web1"]}, "comment_added": {"10.0.0.7": ["app"]}}
    assert read(path) == "# keep\n127.0.0.1\t\tlocalhost\n10.0.0.7\t\tweb1\t\t# app\n"
    again = host.present(run, "web1", ip="10.0.0.7", comment="app")
    assert (again["changes"], again["comment"]) == ({}, "Host web1 (10.0.0.7) already present")
    ret = host.present(run, "web1", ip="10.0.0.8", clean=True)
    assert ret["changes"] == {"added": {"10.0.0.8": ["web1"]}, "removed": {"10.0.0.7": ["web1"]}}
    assert "10.0.0.7" not in read(path)
    assert host.present(run, "x", ip="not-an-ip")["result"] is False
    assert host.absent(test, "web1", ip="10.0.0.8")["result"] is None
    assert host.absent(run, "web1", ip="10.0.0.8")["changes"] == {"host": "web1"}
    assert host.absent(run, "web1", ip="10.0.0.8")["comment"] == "Host web1 (10.0.0.8) already absent"
    assert host.only(run, "127.0.0.1", ["localhost", "lo"])["changes"] == {
        "127.0.0.1": {"old": "localhost", "new": "localhost lo"}}
    assert host.only(run, "127.0.0.1", ["localhost", "lo"])["result"] is True
    assert read(path) == "# keep\n127.0.0.1\t\tlocalhost lo\n"
