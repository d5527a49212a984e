"""demo/run_demo.py, the script behind `make demo`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile

import pytest
import real_salt

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

DEMO = os.path.join(real_salt.REPO, "demo", "run_demo.py")


def load_demo_module():
    spec = importlib.util.spec_from_file_location("run_demo", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_runs_every_stage_and_leaves_nothing_running():
    proc = subprocess.run([sys.executable, DEMO], capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr
    assert "all 3 stage(s) succeeded" in out
    # 1. pillar, offline
    assert "$ saltpan compile --minion web01 --show pillar" in out
    assert "$ saltpan compile --minion db01 --show pillar" in out
    assert "Welcome to web01, the web host in ams1." in out
    assert "Welcome to db01, the db host in ams1." in out
    # 2. masterless apply, then again with nothing left to change
    masterless = out.split("Masterless: web01's states applied")[1].split("A master and three minions")[0]
    first, second = masterless.split("the same apply again")
    assert "Succeeded: 29 (changed=29)\nFailed:     0" in first  # Salt's alignment: counts right-aligned
    assert "Succeeded: 29\nFailed:     0" in second and "changed=" not in second
    assert "ID:" not in second  # state_verbose: False, and no state changed
    # 3. a master and three minions
    plane = out.split("A master and three minions")[1]
    assert "Unaccepted Keys:\ndb01\nlb01\nweb01\nRejected Keys:" in plane
    assert "Key for minion web01 accepted." in plane
    for minion in ("web01", "db01", "lb01"):
        assert f"{minion}:\n    True" in plane
        summary = plane.split(f"Summary for {minion}\n")[1]
        assert summary.split("\n")[2] == "Failed:     0", summary[:200]  # Salt aligns the counts
    assert "3 minions returned, 3 without failures" in plane
    assert "stopped master, web01, db01, lb01 (each exited 0 on SIGTERM)" in plane
    workdir = plane.split("files under ")[1].split("\n")[0].rsplit("/plane", 1)[0]
    assert workdir.startswith(("/tmp/", tempfile.gettempdir())) and not os.path.exists(workdir)
    left = subprocess.run(["pgrep", "-f", workdir], capture_output=True, text=True, check=False)
    assert left.stdout == "", f"processes left running: {left.stdout}"


def test_a_stage_that_fails_stops_its_daemons(monkeypatch, tmp_path):
    """The master 'starts' but never opens its ports: the stage fails and kills what it started."""
    run_demo = load_demo_module()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "saltpan-demo-sleeper"]
    demo = run_demo.Demo(sleeper, str(tmp_path))
    monkeypatch.setattr(run_demo, "wait_until", lambda check, timeout, interval=0.3: False)
    assert run_demo.stage_master_and_minions(demo) is False
    left = subprocess.run(["pgrep", "-f", "saltpan-demo-sleeper"], capture_output=True, text=True, check=False)
    assert left.stdout == ""


def test_a_failing_command_fails_the_stage_and_the_demo(capsys, monkeypatch):
    run_demo = load_demo_module()
    failing = run_demo.Demo([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert run_demo.stage_compile_pillar(failing) is False
    assert "exited with status 3" in capsys.readouterr().err
    monkeypatch.setattr(run_demo, "find_saltpan", lambda: [sys.executable, "-c", "import sys; sys.exit(1)"])
    assert run_demo.main() == 1
    assert "FAILED in stage_compile_pillar" in capsys.readouterr().err


def test_a_hanging_command_is_stopped(capsys):
    run_demo = load_demo_module()
    hanging = run_demo.Demo([sys.executable, "-c", "import time; time.sleep(30)"])
    assert hanging.saltpan_cmd("compile", timeout=0.5) is False
    assert "did not finish within" in capsys.readouterr().err
