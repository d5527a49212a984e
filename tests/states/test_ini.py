"""ini states in a sandbox (Salt parity of results and written files: parity_scenarios.yaml "ini")."""

from __future__ import annotations

import os

from statehelpers import manifest, mode_of, read, write

from runtime.states import ini


def test_options_present_is_idempotent_and_test_mode_writes_nothing(ctx, tctx, sandbox):
    path = write(os.path.join(sandbox, "app.ini"), "[main]\n# port = 80\nname = a\n", 0o640)
    wanted = {"main": {"port": 8080, "name": "a"}, "extra": {"on": "yes"}}
    before = manifest(sandbox)
    ret = ini.options_present(tctx, path, sections=wanted)
    assert ret["result"] is None and manifest(sandbox) == before
    assert ret["comment"] == ("Changed key port in section main.\nUnchanged key name in section main.\n"
                              "Changed key on in section extra.\n")
    ret = ini.options_present(ctx, path, sections=wanted)
    assert ret["changes"] == {"main": {"port": {"before": None, "after": "8080"}},
                              "extra": {"before": None, "after": {"on": "yes"}}}
    assert read(path) == "[main]\nport = 8080\nname = a\n\n[extra]\non = yes\n"  # took the commented line's place
    assert mode_of(path) == 0o640
    again = ini.options_present(ctx, path, sections=wanted)
    assert (again["changes"], again["comment"]) == ({}, "No anomaly detected")
    assert ini.options_present(tctx, path, sections=wanted)["result"] is True


def test_absent_and_sections(ctx, tctx, sandbox):
    path = write(os.path.join(sandbox, "x.ini"), "[a]\nk = 1\nj = 2\n[b]\nz = 3\n")
    assert ini.options_absent(tctx, path, sections={"a": ["k"]})["comment"] == "Deleted key k in section a.\n"
    assert ini.options_absent(ctx, path, sections={"a": ["k", "nope"]})["changes"] == {"a": {"k": "1"}}
    assert ini.sections_absent(ctx, path, sections=["b"])["changes"] == {"b": {"z": "3"}}
    assert ini.sections_present(ctx, path, sections=["c"])["changes"] == {"c": {"before": None, "after": {}}}
    assert read(path) == "[a]\nj = 2\n\n[c]\n"
    assert ini.sections_present(ctx, path, sections=["c"])["changes"] == {}
