"""The shipped systemd units: well formed, and their ExecStart is a saltpan command that parses."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess

import pytest

from runtime.cli import main as cli

UNITS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "systemd")


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in unit files
    with open(os.path.join(UNITS, name), encoding="utf-8") as fh:
        parser.read_file(fh)
    return parser


@pytest.mark.parametrize(("name", "role", "kill_mode"), [("saltpan-master.service", "master", "mixed"),
                                                          ("saltpan-minion.service", "minion", "process")])
def test_unit(name: str, role: str, kill_mode: str) -> None:
    parsed = unit(name)
    service = parsed["Service"]
    assert service["Type"] == "notify"  # runtime/sdnotify.py sends READY=1
    assert service["KillMode"] == kill_mode
    argv = shlex.split(service["ExecStart"])
    assert os.path.basename(argv[0]) == "saltpan" and argv[1] == role
    args = cli.build_parser().parse_args(argv[1:])
    assert args.command == role and args.config == f"/etc/saltpan/{role}"
    assert parsed["Install"]["WantedBy"] == "multi-user.target"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="optional: systemd-analyze not installed")
def test_systemd_analyze_verify() -> None:
    proc = subprocess.run(["systemd-analyze", "verify", *(os.path.join(UNITS, n) for n in sorted(os.listdir(UNITS)))],
                          capture_output=True, text=True, timeout=60)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                if line.strip() and "is not executable" not in line and "No such file" not in line]
    assert problems == []
