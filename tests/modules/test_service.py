"""service.* through saltpan call, on a throwaway SysV init script (and unit files) of this host.

Where systemd is installed but not the running init (containers, CI), Salt 3008 on Debian answers
with debian_service (init scripts, rc links) and systemd_service's offline functions.  Captured
from Salt 3008.3 on Debian 12 in a container, for a script like this one:

    service.status X   -> False, then True after service.start X (which ran `service X start`)
    service.available X -> True; service.missing X -> False; service.status 'saltpan-*' -> {X: True}
    service.offline    -> "/usr/bin/systemctl"; service.get_running -> []; service.execs -> {}
    service.show X     -> {"System has not been booted with systemd ...": "", "Failed to connect ...": ""}
    service.systemctl_reload -> error "Problem performing systemctl daemon-reload: ..."

(Salt's service.enable runs `insserv`, which Debian 12 does not ship, and fails; saltpan's
uses update-rc.d as the service states do: docs/functions.md.)
"""

from __future__ import annotations

import glob
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.states import _service_init as init
from tests.modules.conftest import Minion

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="optional: needs root (writes init scripts and unit files)"),
    pytest.mark.skipif(not init.offline() or not os.path.exists("/usr/sbin/update-rc.d"),
                       reason="optional: systemd runs here (or systemctl/update-rc.d are missing): not the "
                              "offline mode these tests capture"),
]

SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: saltpan test service
### END INIT INFO
echo "$1" >> {log}
case "$1" in
  start|restart|reload|force-reload) echo running > {state} ;;
  stop) echo stopped > {state} ;;
  status) grep -q running {state} ;;
  *) exit 3 ;;
esac
"""


class Service:
    def __init__(self, tmp: Path):
        self.name = f"saltpan-m{secrets.token_hex(4)}"
        self.script = Path(init.INIT_D) / self.name
        self.static_unit = Path("/lib/systemd/system") / f"{self.name}-helper.service"
        self.log = tmp / "calls"
        self.state = tmp / "state"
        self.state.write_text("stopped\n")
        self.script.write_text(SCRIPT.format(name=self.name, log=self.log, state=self.state))
        self.script.chmod(0o755)
        self.static_unit.write_text("[Unit]\nDescription=saltpan test helper\n[Service]\nExecStart=/bin/true\n")

    def calls(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []

    def remove(self) -> None:
        subprocess.run(["update-rc.d", "-f", self.name, "remove"], capture_output=True, timeout=60)
        for path in (self.script, self.static_unit, Path("/etc/systemd/system") / f"{self.name}.service"):
            if path.is_symlink() or path.exists():
                path.unlink()
        assert not glob.glob(f"/etc/rc*.d/*{self.name}"), "rc links left behind"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    made = Service(tmp_path)
    try:
        yield made
    finally:
        made.remove()


def test_start_stop_and_status_run_the_init_script(minion: Minion, service: Service) -> None:
    name = service.name
    assert minion.call("service.available", name) is True
    assert minion.call("service.missing", name) is False
    assert minion.call("service.status", name) is False
    assert minion.call("service.start", name) is True
    assert minion.call("service.status", name) is True
    globbed = minion.call("service.status", "saltpan-m*")   # a glob: {service: running}
    assert globbed[name] is True and all(n.startswith("saltpan-m") for n in globbed)
    assert minion.call("service.stop", name) is True
    assert minion.call("service.status", name) is False
    assert minion.call("service.restart", name) is True
    assert minion.call("service.reload", name) is True
    assert minion.call("service.force_reload", name) is True
    assert service.calls() == ["status", "start", "status", "status", "stop", "status", "restart", "reload",
                               "force-reload"]
    assert minion.call("service.status", "nosuch-service-here") is False
    assert minion.call("service.available", "nosuch-service-here") is False
    assert minion.call("service.missing", "nosuch-service-here") is True


def test_enable_and_disable_edit_the_boot_links(minion: Minion, service: Service) -> None:
    name = service.name
    assert name in minion.call("service.get_all")
    assert minion.call("service.enabled", name) is False
    assert minion.call("service.disabled", name) is True
    assert name in minion.call("service.get_disabled")
    assert minion.call("service.enable", name) is True
    assert glob.glob(f"/etc/rc2.d/S*{name}")
    assert minion.call("service.enabled", name) is True
    assert minion.call("service.disabled", name) is False
    assert name in minion.call("service.get_enabled") and name not in minion.call("service.get_disabled")
    assert minion.call("service.disable", name) is True
    assert minion.call("service.enabled", name) is False
    assert name in minion.call("service.get_disabled")


def test_mask_and_unmask_edit_the_unit_link_offline(minion: Minion, service: Service) -> None:
    name = service.name
    assert minion.call("service.masked", name) is False
    assert minion.call("service.unmask", name) is True          # not masked: nothing to do
    assert minion.call("service.mask", name) is True
    assert os.readlink(f"/etc/systemd/system/{name}.service") == "/dev/null"
    assert minion.call("service.masked", name) is True
    assert minion.call("service.unmask", name) is True
    assert not os.path.lexists(f"/etc/systemd/system/{name}.service")
    assert "for this boot only" in minion.error("service.mask", name, "runtime=True")


def test_systemd_functions_in_offline_mode(minion: Minion, service: Service) -> None:
    assert minion.call("service.offline") == "/usr/bin/systemctl" or minion.call("service.offline").endswith(
        "/systemctl")
    assert minion.call("service.get_running") == []
    static = minion.call("service.get_static")
    assert f"{service.name}-helper" in static and static == sorted(static)
    shown = minion.call("service.show", service.name)
    assert any("has not been booted with systemd" in key for key in shown), shown
    assert minion.call("service.execs") == {}
    assert "Problem performing systemctl daemon-reload" in minion.error("service.systemctl_reload")
