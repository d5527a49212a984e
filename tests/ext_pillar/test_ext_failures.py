"""Failure handling: a driver that raises, returns a non-dict, hangs or cannot load
costs one `_errors` entry naming the driver and the minion; the rest compiles;
ext_pillar_fail_hard stops the compile; a hung driver never blocks the caller."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

from ext_pillar_helpers import compile_pillar, make_opts, write_tree

from runtime.ext_guard import CallGuard
from runtime.ext_loader import DriverLoader

DRIVERS = {
    "pillar/good.py": (
        "def ext_pillar(minion_id, pillar, value='v'):\n"
        "    return {'good': {'minion': minion_id, 'value': value}}\n"),
    "pillar/boom.py": (
        "def ext_pillar(minion_id, pillar):\n"
        "    raise RuntimeError('inventory is down')\n"),
    "pillar/listy.py": (
        "def ext_pillar(minion_id, pillar):\n"
        "    return ['not', 'a', 'dict']\n"),
    "pillar/slow.py": (
        "import time\n"
        "def ext_pillar(minion_id, pillar, seconds=5):\n"
        "    time.sleep(seconds)\n"
        "    pillar['leaked'] = True\n"
        "    return {'slow': minion_id}\n"),
    "pillar/friendly.py": (
        "from ext_pillar import DriverError\n"
        "def ext_pillar(minion_id, pillar):\n"
        "    raise DriverError(f'no host {minion_id} in the CMDB')\n"),
    "pillar/quitter.py": (
        "import sys\n"
        "def ext_pillar(minion_id, pillar):\n"
        "    sys.exit(3)\n"),
    "pillar/mutator.py": (
        "def ext_pillar(minion_id, pillar, grains=None, opts=None):\n"
        "    pillar['sls'] = 'changed by a driver'\n"
        "    grains['os'] = 'changed'\n"
        "    opts['ext_pillar'] = []\n"
        "    return {'mutator': 'ran'}\n"),
    "pillar/seer.py": (
        "def ext_pillar(minion_id, pillar):\n"
        "    return {'seen': sorted(pillar)}\n"),
    "pillar/broken.py": (
        "def ext_pillar(minion_id, pillar):\n"
        "    return {'a': 1\n"),
    "pillar/nofunc.py": "VALUE = 1\n",
}


def _opts(tmp_path, ext_pillar, **extra):
    ext = tmp_path / "ext"
    write_tree(ext, DRIVERS)
    write_tree(tmp_path / "pillar", {"top.sls": "base:\n  '*':\n    - common\n", "common.sls": "sls: here\n"})
    return make_opts(tmp_path, extension_modules=str(ext), ext_pillar=ext_pillar, **extra)


def test_raising_driver_adds_one_error_and_the_rest_compiles(tmp_path):
    opts = _opts(tmp_path, [{"boom": {}}, {"good": {"value": 7}}])
    result = compile_pillar(opts, "web01")
    assert result.pillar == {
        "sls": "here",
        "good": {"minion": "web01", "value": 7},
        "_errors": ["Failed to load ext_pillar boom for minion web01: RuntimeError: inventory is down"],
    }
    assert not result.failed
    assert [e.kind for e in result.errors] == ["ext_pillar_error"]


def test_driver_error_message_is_shown_as_is(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"friendly": {}}]), "db02")
    assert result.pillar["_errors"] == ["Failed to load ext_pillar friendly for minion db02: no host db02 in the CMDB"]


def test_non_dict_result_is_an_error(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"listy": {}}, {"good": {}}]), "web01")
    assert result.pillar["_errors"] == [
        "Failed to load ext_pillar listy for minion web01: it returned a list, not a dict; its data was ignored"]
    assert result.pillar["good"] == {"minion": "web01", "value": "v"}


def test_unknown_driver(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"nosuch": {}}]), "web01")
    assert result.pillar["_errors"] == [
        "ext_pillar interface named nosuch is unavailable (minion web01): no driver 'nosuch' in the ext_pillar "
        "package or in <extension_modules>/pillar/"]


def test_bad_arguments_are_named(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"good": {"valeu": 1}}]), "web01")
    assert result.pillar["_errors"] == [
        "Failed to load ext_pillar good for minion web01: bad arguments in the ext_pillar configuration: "
        "got an unexpected keyword argument 'valeu'"]


def test_custom_driver_that_does_not_import(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"broken": {}}, {"nofunc": {}}, {"good": {}}]), "web01")
    broken = str(tmp_path / "ext" / "pillar" / "broken.py")
    nofunc = str(tmp_path / "ext" / "pillar" / "nofunc.py")
    assert result.pillar["_errors"] == [
        f"Failed to load ext_pillar broken for minion web01: cannot import {broken}:2: SyntaxError: "
        "'{' was never closed",
        f"Failed to load ext_pillar nofunc for minion web01: {nofunc} defines no "
        "ext_pillar(minion_id, pillar, ...) function",
    ]
    assert result.pillar["good"]["minion"] == "web01"


def test_edited_custom_driver_is_reloaded(tmp_path):
    opts = _opts(tmp_path, [{"broken": {}}])
    loader = DriverLoader(opts)
    assert "_errors" in compile_pillar(opts, "web01", loader=loader).pillar
    path = tmp_path / "ext" / "pillar" / "broken.py"
    path.write_text("def ext_pillar(minion_id, pillar):\n    return {'fixed': minion_id}\n")
    assert compile_pillar(opts, "web01", loader=loader).pillar == {"sls": "here", "fixed": "web01"}


def test_sys_exit_in_a_driver_does_not_stop_the_process(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"quitter": {}}, {"good": {}}]), "web01")
    assert result.pillar["_errors"] == ["Failed to load ext_pillar quitter for minion web01: it raised SystemExit(3)"]
    assert "good" in result.pillar


def test_timeout_abandons_the_call_and_the_compile_goes_on(tmp_path):
    opts = _opts(tmp_path, [{"slow": {"seconds": 1.5}}, {"good": {}}], ext_pillar_timeout=0.3)
    started = time.monotonic()
    result = compile_pillar(opts, "web01")
    elapsed = time.monotonic() - started
    assert elapsed < 1.2, elapsed
    assert result.pillar == {
        "sls": "here",
        "good": {"minion": "web01", "value": "v"},
        "_errors": ["Failed to load ext_pillar slow for minion web01: no answer within 0.3 s (ext_pillar_timeout); "
                    "the call was abandoned and its data ignored"],
    }
    # the abandoned call finishes later and writes into its copy of the pillar: nothing reaches the result
    time.sleep(1.5)
    assert "leaked" not in result.pillar and "slow" not in result.pillar


def test_hung_driver_is_not_called_again_while_its_calls_still_run(tmp_path):
    opts = _opts(tmp_path, [{"slow": {"seconds": 2.0}}, {"good": {}}], ext_pillar_timeout=0.2)
    loader = DriverLoader(opts, CallGuard(max_abandoned=2))
    for minion in ("a1", "a2"):
        assert "no answer within 0.2 s" in compile_pillar(opts, minion, loader=loader).pillar["_errors"][0]
    started = time.monotonic()
    third = compile_pillar(opts, "a3", loader=loader)
    assert time.monotonic() - started < 0.15  # fails at once, no thread started
    assert third.pillar["_errors"] == [
        "Failed to load ext_pillar slow for minion a3: not called: 2 earlier call(s) of this driver timed out and "
        "are still running; it is called again once one of them ends"]
    assert third.pillar["good"]["minion"] == "a3"  # other drivers keep serving
    deadline = time.monotonic() + 5
    while loader.guard.abandoned("slow") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loader.guard.abandoned("slow") == 0
    assert not any(t.name == "ext_pillar:slow" for t in threading.enumerate())


def test_many_minions_in_parallel_with_a_slow_driver(tmp_path):
    opts = _opts(tmp_path, [{"slow": {"seconds": 0.2}}], ext_pillar_timeout=5)
    loader = DriverLoader(opts)
    results: dict[str, dict] = {}

    def one(minion: str) -> None:
        results[minion] = compile_pillar(opts, minion, loader=loader).pillar

    threads = [threading.Thread(target=one, args=(f"m{i}",)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert time.monotonic() - started < 1.5
    assert results == {f"m{i}": {"sls": "here", "slow": f"m{i}"} for i in range(8)}


def test_fail_hard_returns_only_the_errors(tmp_path):
    opts = _opts(tmp_path, [{"good": {}}, {"boom": {}}, {"seer": {}}], ext_pillar_fail_hard=True)
    result = compile_pillar(opts, "web01")
    assert result.failed
    assert result.pillar == {"_errors": [
        "Failed to load ext_pillar boom for minion web01: RuntimeError: inventory is down",
        "Pillar of minion web01 not compiled: ext_pillar boom failed and ext_pillar_fail_hard is true",
    ]}
    assert [e.kind for e in result.errors] == ["ext_pillar_error", "ext_pillar_error"]


def test_fail_hard_on_timeout_with_ext_pillar_first(tmp_path):
    opts = _opts(tmp_path, [{"slow": {"seconds": 1}}], ext_pillar_fail_hard=True, ext_pillar_first=True,
                 ext_pillar_timeout=0.2)
    result = compile_pillar(opts, "web01")
    assert result.failed
    assert result.pillar == {"_errors": [
        "Failed to load ext_pillar slow for minion web01: no answer within 0.2 s (ext_pillar_timeout); "
        "the call was abandoned and its data ignored",
        "Pillar of minion web01 not compiled: ext_pillar slow failed and ext_pillar_fail_hard is true",
    ]}


def test_fail_hard_without_failure_compiles_normally(tmp_path):
    result = compile_pillar(_opts(tmp_path, [{"good": {}}], ext_pillar_fail_hard=True), "web01")
    assert not result.failed
    assert result.pillar == {"sls": "here", "good": {"minion": "web01", "value": "v"}}


def test_drivers_get_copies_of_pillar_grains_and_opts(tmp_path):
    opts = _opts(tmp_path, [{"mutator": {}}, {"good": {}}])
    grains = {"id": "web01", "os": "Debian"}
    loader = DriverLoader(opts)
    result = compile_pillar(opts, "web01", grains=grains, loader=loader)
    assert result.pillar == {"sls": "here", "mutator": "ran", "good": {"minion": "web01", "value": "v"}}
    assert grains["os"] == "Debian"
    assert opts["ext_pillar"] == [{"mutator": {}}, {"good": {}}]
    # and the next compile with the same loader is unaffected
    assert compile_pillar(opts, "web02", loader=loader).pillar["good"]["minion"] == "web02"


def test_drivers_never_see_the_pillar_override(tmp_path):
    for first in (False, True):
        opts = _opts(tmp_path, [{"seer": {}}], ext_pillar_first=first)
        result = compile_pillar(opts, "web01", pillar_override={"injected": "by the minion"})
        assert result.pillar["injected"] == "by the minion"
        assert "injected" not in result.pillar["seen"]


def test_malformed_ext_pillar_option(tmp_path):
    result = compile_pillar(_opts(tmp_path, [["good"]]), "web01")
    assert result.pillar["_errors"] == ['The "ext_pillar" option is malformed: each entry must be a one-key mapping '
                                       "{driver: arguments}"]
    assert all(re.search("ext_pillar", m, re.I) for m in result.pillar["_errors"])


def test_every_driver_error_classifies_as_ext_pillar(tmp_path):
    opts = _opts(tmp_path, [{"boom": {}}, {"listy": {}}, {"nosuch": {}}, {"slow": {"seconds": 1}}],
                 ext_pillar_timeout=0.1)
    messages = compile_pillar(opts, "web01").pillar["_errors"]
    assert len(messages) == 4
    assert all(re.search("ext_pillar", m, re.I) for m in messages)


def test_cli_compile_with_fail_hard_prints_only_errors_and_exits_1(tmp_path):
    config = tmp_path / "minion"
    (tmp_path / "pillar").mkdir()
    config.write_text(
        "id: web01\n"
        "pillar_roots: {base: [pillar]}\n"
        "ext_pillar:\n"
        "  - cmd_json: \"echo '{\\\"a\\\": 1}'\"\n"
        "  - cmd_json: echo nope\n"
        "ext_pillar_fail_hard: true\n")
    proc = subprocess.run([sys.executable, "-m", "runtime", "compile", "--config", str(config), "--show", "pillar",
                           "--out", "json"], capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": _project_dir()})
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {"_errors": [
        "Failed to load ext_pillar cmd_json for minion web01: the output of 'echo nope' is not JSON: Expecting "
        "value at line 1 column 1",
        "Pillar of minion web01 not compiled: ext_pillar cmd_json failed and ext_pillar_fail_hard is true"]}


def _project_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_custom_driver_hanging_at_import_is_bounded_too(tmp_path):
    opts = _opts(tmp_path, [{"hangs": {}}, {"good": {}}], ext_pillar_timeout=0.2)
    (tmp_path / "ext" / "pillar" / "hangs.py").write_text(
        "import time\ntime.sleep(1)\ndef ext_pillar(minion_id, pillar):\n    return {'late': True}\n")
    started = time.monotonic()
    result = compile_pillar(opts, "web01")
    assert time.monotonic() - started < 0.9
    assert result.pillar["_errors"] == [
        "Failed to load ext_pillar hangs for minion web01: no answer within 0.2 s (ext_pillar_timeout); "
        "the call was abandoned and its data ignored"]
    assert result.pillar["good"]["minion"] == "web01"
