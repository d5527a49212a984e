"""sysctl.present, applied for real inside a private network namespace (``unshare -n``).

net.* parameters belong to the network namespace, so writing net.ipv4.ip_forward there leaves
the host alone. The config file is a temp file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from runtime.states import StateContext, sysctl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from runtime.states import StateContext, sysctl
steps = []
for test, value in ((True, 1), (False, 1), (False, 1), (True, 0), (False, 0)):
    ret = sysctl.present(StateContext(test=test), "net.ipv4.ip_forward", value, config={config!r})
    steps.append([ret, sysctl.running_value("net.ipv4.ip_forward")])
print(json.dumps(steps))
"""


def _netns_ok() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _netns_ok(), reason="optional: cannot create a network namespace (unshare -n) here")
def test_present_for_real_in_a_private_network_namespace(tmp_path):
    config = str(tmp_path / "sysctl.d" / "99-test.conf")
    host_before = sysctl.running_value("net.ipv4.ip_forward")
    proc = subprocess.run(["unshare", "-n", sys.executable, "-c", SCRIPT.format(root=ROOT, config=config)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)
    (test1, cur1), (run1, cur2), (run2, cur3), (test0, cur4), (run0, cur5) = steps
    # a fresh namespace starts with ip_forward 0: test mode predicts, changes nothing
    assert test1["result"] is None and test1["changes"] == {} and cur1 == "0"
    assert test1["comment"] == "Sysctl option net.ipv4.ip_forward set to be changed to 1"
    assert run1 == {"name": "net.ipv4.ip_forward", "result": True, "changes": {"net.ipv4.ip_forward": 1},
                    "comment": "Updated sysctl value net.ipv4.ip_forward = 1"}
    assert cur2 == "1"
    assert run2["changes"] == {} and run2["result"] is True
    assert run2["comment"] == "Sysctl value net.ipv4.ip_forward = 1 is already set"
    assert test0["result"] is None and cur4 == "1"
    assert run0["changes"] == {"net.ipv4.ip_forward": 0} and cur5 == "0"
    with open(config) as handle:
        assert handle.read() == sysctl.CONFIG_HEADER + "net.ipv4.ip_forward = 0\n"
    assert sysctl.running_value("net.ipv4.ip_forward") == host_before


def test_test_mode_on_the_host_changes_nothing(tmp_path):
    """The host's own values are not changed by tests: test mode, and the command a run would use."""
    config = str(tmp_path / "sysctl.conf")
    current = sysctl.running_value("vm.swappiness")
    other = "61" if current != "61" else "62"
    ret = sysctl.present(StateContext(test=True), "vm.swappiness", other, config=config)
    assert ret["result"] is None and ret["changes"] == {}
    assert ret["comment"] == f"Sysctl option vm.swappiness set to be changed to {other}"
    assert sysctl.running_value("vm.swappiness") == current and not os.path.exists(config)
    assert sysctl.assign_command("vm.swappiness", other) == ["sysctl", "-w", f"vm.swappiness={other}"]
    same = sysctl.present(StateContext(test=True), "vm.swappiness", current, config=config)
    assert same["result"] is None and "not in a config file" in same["comment"]


def test_config_keeps_other_lines_and_comments(tmp_path):
    config = tmp_path / "sysctl.conf"
    config.write_text("# keep me\nvm.swappiness=10\nkernel.x = 1\n# net.ipv4.ip_forward = 1\n")
    data, same = sysctl._edited(str(config), "vm.swappiness", 20)
    assert not same
    assert data.decode() == "# keep me\nvm.swappiness = 20\nkernel.x = 1\n# net.ipv4.ip_forward = 1\n"
    data, same = sysctl._edited(str(config), "vm.swappiness", "  10 ")
    assert same
    assert sysctl.configured(str(config)) == {"vm.swappiness": "10", "kernel.x": "1"}


def test_a_parameter_that_does_not_exist_fails_without_writing(tmp_path):
    config = str(tmp_path / "sysctl.conf")
    ret = sysctl.present(StateContext(), "net.saltpan.nope", 1, config=config)
    assert ret["result"] is False and ret["changes"] == {}
    assert ret["comment"] == "Failed to set net.saltpan.nope to 1: sysctl net.saltpan.nope does not exist"
    assert not os.path.exists(config)
