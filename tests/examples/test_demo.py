"""demo/run_demo.py, the script behind `make demo`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import real_salt

DEMO = os.path.join(real_salt.REPO, "demo", "run_demo.py")


def load_demo_module():
    spec = importlib.util.spec_from_file_location("run_demo", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_prints_the_pillar_of_web01_and_db01():
    proc = subprocess.run([sys.executable, DEMO], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "$ saltpan compile --minion web01 --show pillar" in proc.stdout
    assert "$ saltpan compile --minion db01 --show pillar" in proc.stdout
    assert "Welcome to web01, the web host in ams1." in proc.stdout
    assert "Welcome to db01, the db host in ams1." in proc.stdout
    assert "all 1 stage(s) succeeded" in proc.stdout


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
