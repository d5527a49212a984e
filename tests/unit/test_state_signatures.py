"""runtime/states/signatures.py: which state functions exist and which arguments they take, against
Salt 3008's (runtime/data/salt_state_args.json, captured by tools/capture_salt_state_args.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runtime.states import signatures
from runtime.states.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def messages(chunk: dict) -> list[tuple[bool, str]]:
    return [(f.error, f.message) for f in signatures.check_chunk(chunk)]


def test_every_registered_module_has_its_functions() -> None:
    known = signatures.functions()
    for name, entry in REGISTRY.items():
        if entry.impl is not None:
            assert any(k.startswith(f"{name}.") for k in known), name
    assert {"file.managed", "pkg.installed", "service.running", "cmd.run", "test.nop"} <= set(known)


def test_a_misspelt_function_is_an_error_with_the_closest_name() -> None:
    assert messages({"state": "file", "fun": "manged", "name": "/x"}) == [
        (True, "state 'file.manged' is not available: module 'file' has no function 'manged' (did you mean "
               "'file.managed'?)")]
    assert messages({"state": "pkgg", "fun": "installed", "name": "x"}) == [
        (True, "state 'pkgg.installed' is not available: there is no state module 'pkgg' (did you mean "
               "'pkg.installed'?)")]
    assert messages({"state": "mysql_user", "fun": "present", "name": "x"})[0][0] is True


def test_a_module_of_another_os_is_a_warning() -> None:
    assert messages({"state": "macpackage", "fun": "installed", "name": "x"}) == [
        (False, "state 'macpackage.installed' only runs on another OS (Only supported on Mac OS)")]


def test_arguments() -> None:
    # Salt's file.managed takes **kwargs: only a likely typo is reported
    assert messages({"state": "file", "fun": "managed", "name": "/x", "conents": "y", "whatever": 1}) == [
        (False, "'conents' is not an argument of file.managed (did you mean 'contents'?): it is ignored")]
    # requisites, check keys and Salt's global keywords are every state's
    assert messages({"state": "file", "fun": "managed", "name": "/x", "require": [], "onlyif": "true",
                     "order": 1, "__sls__": "a", "__env__": "base", "__id__": "x", "retry": {}}) == []
    assert messages({"state": "cmd", "fun": "run", "name": "x", "unles": "true"}) == [
        (False, "'unles' is not an argument of cmd.run (did you mean 'unless'?): it is ignored")]
    # module.run passes any argument to the function it calls
    assert messages({"state": "module", "fun": "run", "name": "test.arg", "m_name": "x", "anything": 1}) == []


def test_salt_without_kwargs_fails_the_state() -> None:
    strict = sorted(name for name, spec in json.loads(
        (ROOT / "runtime" / "data" / "salt_state_args.json").read_text())["states"].items()
        if not spec["kwargs"] and name in signatures.functions())
    assert strict, "Salt has state functions without **kwargs"
    mod, fun = strict[0].split(".")
    found = messages({"state": mod, "fun": fun, "name": "x", "zzzqqq": 1})
    assert found == [(False, f"'zzzqqq' is not an argument of {mod}.{fun}: it is ignored (Salt fails the state: "
                             "invalid keyword argument)")]


@pytest.mark.skipif(not os.path.exists("/work/saltvenv/bin/python"), reason="optional: no Salt venv to re-capture")
def test_stored_salt_state_arguments_are_current() -> None:
    done = subprocess.run(["/work/saltvenv/bin/python", str(ROOT / "tools" / "capture_salt_state_args.py"), "--check"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
