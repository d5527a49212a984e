"""service states for real, on a throwaway unit and SysV init script.

Where systemd is installed but not the running init (containers, CI), Salt 3008 runs in "offline"
mode: running/dead do nothing ("Running in OFFLINE mode. Nothing to do"), unit-file links are
still edited by systemctl, and a watch starts/restarts through the SysV init script. Captured
from Salt 3008.3 on Debian 12 in a container:

    service.running dbus                 -> True  "Running in OFFLINE mode. Nothing to do"
    service.running cron, watch changed  -> test: None "Service is set to be started"
                                            run (no init script): False {"cron": false}
                                                                   "Failed to start the service"
    service.masked dbus, test            -> None {"masked": {"old": false, "new": true}}
    service.unmasked dbus                -> True "Service dbus was already unmasked"
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess

import pytest

from compiler.requisites import order_chunks
from runtime.executor import Executor
from runtime.states import StateContext, has_mod_watch, service
from runtime.states import _service_init as init

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="optional: needs root (writes unit files and init scripts)"),
]
needs_offline = pytest.mark.skipif(not init.offline(), reason="optional: systemd is the running init here "
                                                              "(or systemctl is missing): not Salt's offline mode")

SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: saltpan test service
### END INIT INFO
STATE={state}
echo "$1" >> {log}
case "$1" in
  start) echo running > $STATE ;;
  stop) echo stopped > $STATE ;;
  restart|reload|force-reload) echo running > $STATE ;;
  status) grep -q running $STATE ;;
  *) exit 3 ;;
esac
"""


class Throwaway:
    def __init__(self, tmp_path, with_script: bool = True):
        self.name = f"saltpan-t{secrets.token_hex(4)}"
        self.unit = f"/lib/systemd/system/{self.name}.service"
        self.script = os.path.join(init.INIT_D, self.name)
        self.state = str(tmp_path / "state")
        self.log = str(tmp_path / "log")
        with open(self.state, "w") as handle:
            handle.write("stopped\n")
        with open(self.unit, "w") as handle:
            handle.write("[Unit]\nDescription=saltpan test\n[Service]\nExecStart=/bin/sleep 1000\n"
                         "[Install]\nWantedBy=multi-user.target\n")
        if with_script:
            with open(self.script, "w") as handle:
                handle.write(SCRIPT.format(name=self.name, state=self.state, log=self.log))
            os.chmod(self.script, 0o755)

    def calls(self) -> list[str]:
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return handle.read().split()

    def is_enabled(self) -> str:
        return subprocess.run(["systemctl", "is-enabled", self.name], capture_output=True, text=True).stdout.strip()

    def cleanup(self) -> None:
        for args in (["systemctl", "unmask", self.name], ["systemctl", "disable", self.name]):
            subprocess.run(args, capture_output=True)
        if shutil.which("update-rc.d") and os.path.exists(self.script):
            subprocess.run(["update-rc.d", "-f", self.name, "remove"], capture_output=True)
        for path in (self.unit, self.script):
            if os.path.exists(path):
                os.unlink(path)


@pytest.fixture
def svc(tmp_path):
    unit = Throwaway(tmp_path)
    yield unit
    unit.cleanup()


@pytest.fixture
def bare(tmp_path):
    unit = Throwaway(tmp_path, with_script=False)
    yield unit
    unit.cleanup()


@needs_offline
def test_running_and_dead_do_nothing_offline(svc):
    for test in (True, False):
        ctx = StateContext(test=test)
        for fun in (service.running, service.dead):
            ret = fun(ctx, svc.name, enable=True)
            assert ret == {"name": svc.name, "changes": {}, "result": True,
                           "comment": "Running in OFFLINE mode. Nothing to do"}
    assert svc.calls() == []
    assert svc.is_enabled() == "disabled"  # Salt ignores enable in offline mode too


@needs_offline
def test_enabled_and_disabled_edit_unit_links_offline(svc):
    run, test = StateContext(), StateContext(test=True)
    ret = service.enabled(test, svc.name)
    assert (ret["result"], ret["changes"]) == (None, {})
    assert ret["comment"] == f"Service {svc.name} set to be enabled"
    assert svc.is_enabled() == "disabled"
    ret = service.enabled(run, svc.name)
    assert (ret["result"], ret["changes"]) == (True, {svc.name: True})
    assert svc.is_enabled() == "enabled"
    again = service.enabled(run, svc.name)
    assert (again["result"], again["changes"]) == (True, {})
    assert again["comment"] == f"Service {svc.name} is already enabled, and is in the desired state"
    assert service.disabled(test, svc.name)["result"] is None and svc.is_enabled() == "enabled"
    assert service.disabled(run, svc.name)["changes"] == {svc.name: True}
    assert svc.is_enabled() == "disabled"
    assert service.disabled(run, svc.name)["changes"] == {}


@needs_offline
def test_enable_a_missing_service_offline():
    name = f"saltpan-missing-{secrets.token_hex(4)}"
    # Salt: test mode None ("would have been enabled"), a run False; disabled is True either way
    assert service.enabled(StateContext(test=True), name)["result"] is None
    ret = service.enabled(StateContext(), name)
    assert (ret["result"], ret["comment"]) == (False, f"The named service {name} is not available")
    assert service.disabled(StateContext(), name)["result"] is True


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="optional: no systemctl on this host")
def test_masked_and_unmasked(svc):
    run, test = StateContext(), StateContext(test=True)
    link = f"/etc/systemd/system/{svc.name}.service"
    ret = service.masked(test, svc.name)
    assert ret["result"] is None and ret["changes"] == {"masked": {"old": False, "new": True}}
    assert not os.path.islink(link)
    ret = service.masked(run, svc.name)
    assert (ret["result"], ret["comment"]) == (True, f"Service {svc.name} was masked")
    assert os.readlink(link) == "/dev/null"
    assert service.masked(run, svc.name)["comment"] == f"Service {svc.name} is already masked"
    ret = service.unmasked(test, svc.name)
    assert ret["result"] is None and ret["changes"] == {"masked": {"old": True, "new": False}}
    assert service.unmasked(run, svc.name)["changes"] == {"masked": {"old": True, "new": False}}
    assert not os.path.lexists(link)
    ret = service.unmasked(run, svc.name)
    assert (ret["result"], ret["changes"], ret["comment"]) == (True, {}, f"Service {svc.name} was already unmasked")
    if init.systemd_booted():
        ret = service.masked(run, svc.name, runtime=True)
        assert ret["changes"] == {"runtime masked": {"old": False, "new": True}}
        assert os.readlink(f"/run/systemd/system/{svc.name}.service") == "/dev/null"
    else:  # a runtime mask would create /run/systemd/system: the host would look booted with systemd
        ret = service.masked(run, svc.name, runtime=True)
        assert ret["result"] is False and "systemd is not the running init" in ret["comment"]
        assert not os.path.exists(init.SYSTEMD_MARKER)


@needs_offline
def test_mod_watch_goes_through_the_init_script_offline(svc):
    ret = service.mod_watch(StateContext(test=True), svc.name, sfun="running")
    assert ret == {"name": svc.name, "changes": {}, "result": None, "comment": "Service is set to be started"}
    assert svc.calls() == ["status"]
    ret = service.mod_watch(StateContext(), svc.name, sfun="running")
    assert ret == {"name": svc.name, "changes": {svc.name: True}, "result": True, "comment": "Service started"}
    assert svc.calls()[1:] == ["status", "stop", "start"]
    assert service.mod_watch(StateContext(), svc.name, sfun="running")["comment"] == "Service restarted"
    assert svc.calls()[-1] == "restart"
    assert service.mod_watch(StateContext(), svc.name, sfun="running", reload=True)["comment"] == "Service reloaded"
    assert svc.calls()[-1] == "reload"
    assert service.mod_watch(StateContext(), svc.name, sfun="dead")["comment"] == "Service stopped"
    assert service.mod_watch(StateContext(), svc.name, sfun="dead")["comment"] == "Service is already stopped"


@needs_offline
def test_mod_watch_without_an_init_script_fails_as_salt_does(bare):
    ret = service.mod_watch(StateContext(), bare.name, sfun="running")
    assert ret == {"name": bare.name, "changes": {bare.name: False}, "result": False,
                   "comment": "Failed to start the service"}


@needs_offline
def test_a_watch_in_a_run_offline(svc, tmp_path):
    # service.running watching a changed state: the running call does nothing, then mod_watch
    chunks = [
        {"state": "test", "fun": "succeed_with_changes", "name": "conf", "__id__": "conf", "__sls__": "s",
         "__env__": "base", "order": 1},
        {"state": "service", "fun": "running", "name": svc.name, "__id__": "svc", "__sls__": "s",
         "__env__": "base", "order": 2, "watch": [{"test": "conf"}]},
    ]
    for test, result, comment in ((True, None, "Service is set to be started"), (False, True, "Service started")):
        lowstate, problems = order_chunks([dict(c) for c in chunks], has_mod_watch)
        assert not problems
        out = Executor(lowstate, lambda low, t: StateContext(test=t), test=test).apply()
        ret = out[f"service_|-svc_|-{svc.name}_|-running"]
        assert (ret["result"], ret["comment"]) == (result, comment)


@pytest.mark.skipif(shutil.which("update-rc.d") is None, reason="optional: no update-rc.d on this host")
def test_sysv_backend(svc):
    """What a host without systemd uses for everything (Salt's debian_service)."""
    sysv = init.SysV()
    assert sysv.available(svc.name) and not sysv.available(f"{svc.name}-nope")
    assert not sysv.active(svc.name)
    assert sysv.action(svc.name, "start").ok and sysv.active(svc.name)
    assert not sysv.enabled(svc.name)
    assert sysv.set_boot(svc.name, True).ok and sysv.enabled(svc.name)
    assert sysv.set_boot(svc.name, False).ok and not sysv.enabled(svc.name)
