"""network.*, status.* and disk.* through saltpan call.

network.interfaces gives exactly what Salt 3008.3's gives on the same host (compared field by field
when this was written: {iface: {up, hwaddr, inet: [{address, netmask, broadcast, label}], inet6:
[{address, prefixlen, scope}]}}); here it is checked against `ip -j addr`, the kernel's own JSON.
The address functions read the minion's grains (static ones here, as a minion's config sets them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.modules.conftest import Minion


def test_address_arithmetic(minion: Minion) -> None:
    assert minion.call("network.calc_net", "10.1.2.3/24") == "10.1.2.0/24"
    assert minion.call("network.calc_net", "10.1.2.3", "255.255.0.0") == "10.1.0.0/16"
    assert minion.call("network.ip_in_subnet", "10.1.2.3", "10.0.0.0/8") is True
    assert minion.call("network.ip_in_subnet", "192.168.1.1", "10.0.0.0/8") is False
    assert minion.call("network.convert_cidr", "192.168.0.0/28") == {
        "network": "192.168.0.0", "netmask": "255.255.255.240", "broadcast": "192.168.0.15"}
    assert minion.call("network.is_private", "10.0.0.1") is True
    assert minion.call("network.is_loopback", "127.0.0.1") is True
    assert minion.call("network.reverse_ip", "10.1.2.3") == "3.2.1.10.in-addr.arpa"
    assert minion.call("network.iphexval", "10.0.0.1") == "0A000001"


def test_this_minions_addresses_from_its_grains(minion: Minion) -> None:
    assert minion.call("network.ip_addrs") == ["10.1.2.3"]
    assert minion.call("network.ip_addrs", "include_loopback=True") == ["10.1.2.3", "127.0.0.1"]
    assert minion.call("network.ip_addrs", "eth0") == ["10.1.2.3"]
    assert minion.call("network.ip_addrs", "cidr=192.168.0.0/16") == []
    assert minion.call("network.ip_addrs", "type=private") == ["10.1.2.3"]
    assert minion.call("network.ip_addrs6") == ["fd00::5"]
    assert minion.call("network.in_subnet", "10.1.0.0/16") is True
    grains = minion.call("grains.items")
    assert minion.call("network.get_hostname") == grains["host"]
    assert minion.call("network.get_fqdn") == grains["fqdn"]


@pytest.mark.skipif(shutil.which("ip") is None, reason="optional: iproute2 (ip) is not installed")
def test_interfaces_as_the_kernel_reports_them(minion: Minion) -> None:
    kernel = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True,
                                       check=True).stdout)
    got = minion.call("network.interfaces")
    assert sorted(got) == sorted(link["ifname"] for link in kernel)
    for link in kernel:
        mine = got[link["ifname"]]
        assert mine["up"] is ("UP" in link["flags"])
        if link.get("address"):
            assert mine["hwaddr"] == link["address"]
        v4 = [a["local"] for a in link["addr_info"] if a["family"] == "inet" and not a.get("secondary")]
        assert [a["address"] for a in mine.get("inet", [])] == v4
        v6 = [a["local"] for a in link["addr_info"] if a["family"] == "inet6"]
        assert [a["address"] for a in mine.get("inet6", [])] == v6
    assert minion.call("network.hw_addr", "lo") == "00:00:00:00:00:00"
    assert minion.call("network.interface", "lo")[0] == {"address": "127.0.0.1", "netmask": "255.0.0.0",
                                                         "broadcast": None, "label": "lo"}
    assert minion.call("network.interface_ip", "lo") == "127.0.0.1"
    assert minion.call("network.hw_addr", "nosuch0").startswith('Interface "nosuch0" not in available interfaces')
    assert "127.0.0.0/8" not in minion.call("network.subnets")
    assert set(minion.call("network.subnets")) <= {
        str(__import__("ipaddress").ip_interface(f"{a['address']}/{a['netmask']}").network)
        for data in got.values() for a in data.get("inet", [])}


def test_status(minion: Minion) -> None:
    with open("/proc/uptime") as fh:
        seconds = int(float(fh.read().split()[0]))
    up = minion.call("status.uptime")
    assert abs(up["seconds"] - seconds) < 60 and up["since_t"] == pytest.approx(time.time() - up["seconds"], abs=60)
    assert set(up) >= {"seconds", "since_iso", "since_t", "days", "time"}
    load = minion.call("status.loadavg")
    assert set(load) == {"1-min", "5-min", "15-min"} and all(v >= 0 for v in load.values())
    mem = minion.call("status.meminfo")
    assert mem["MemTotal"]["unit"] == "kB" and int(mem["MemTotal"]["value"]) > 0
    assert "processor" in minion.call("status.cpuinfo")
    root = minion.call("status.diskusage", "/")["/"]
    st = os.statvfs("/")
    assert root["total"] == st.f_blocks * st.f_bsize
    sleeper = subprocess.Popen(["sleep", "987654"])
    try:
        assert minion.call("status.pid", "sleep 98765[4]") == str(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert minion.call("status.pid", "no-such-process-pattern-xyz") == ""
    with open("/proc/version") as fh:
        assert minion.call("status.version") == fh.read().strip()
    assert minion.call("status.time", "%Y") == time.strftime("%Y")


def test_disk(minion: Minion) -> None:
    usage = minion.call("disk.usage")
    assert set(usage["/"]) == {"filesystem", "1K-blocks", "used", "available", "capacity"}
    assert usage["/"]["capacity"].endswith("%")
    assert minion.call("disk.percent", "/") == usage["/"]["capacity"]
    assert minion.call("disk.percent", "/no/such/mount") == {}
    assert set(minion.call("disk.inodeusage")["/"]) == {"inodes", "used", "free", "use", "filesystem"}
    assert minion.error("disk.usage", "args=-l").strip() == "Error running 'disk.usage': Invalid flag passed to disk.usage"
    assert minion.error("disk.inodeusage", "/").strip() == "Error running 'disk.inodeusage': Invalid flag passed to disk.inodeusage"
    assert set(minion.call("disk.usage", "l")) <= set(usage)      # local file systems only, as df -l
