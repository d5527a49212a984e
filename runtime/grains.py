"""Core grains of this host, merged with config `grains` and a grains file.

Read from /etc/os-release, /proc and /sys without running commands, so they
are cheap enough to compute at every start.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import platform
import socket
import struct
import sys
from collections.abc import Mapping
from typing import Any

from runtime.config import ConfigError

_OS_FAMILY = {
    "debian": "Debian", "ubuntu": "Debian", "linuxmint": "Debian", "raspbian": "Debian", "devuan": "Debian",
    "rhel": "RedHat", "centos": "RedHat", "fedora": "RedHat", "rocky": "RedHat", "almalinux": "RedHat",
    "ol": "RedHat", "amzn": "RedHat", "arch": "Arch", "manjaro": "Arch", "alpine": "Alpine",
    "opensuse-leap": "Suse", "opensuse-tumbleweed": "Suse", "sles": "Suse", "gentoo": "Gentoo",
}
_OS_NAME = {
    "debian": "Debian", "ubuntu": "Ubuntu", "rhel": "RedHat", "centos": "CentOS", "fedora": "Fedora",
    "rocky": "Rocky", "almalinux": "AlmaLinux", "amzn": "Amazon", "arch": "Arch", "alpine": "Alpine",
    "opensuse-leap": "Leap", "sles": "SUSE", "ol": "OEL", "linuxmint": "Mint", "gentoo": "Gentoo",
}


def _os_release() -> dict[str, str]:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8") as fh:
                out = {}
                for line in fh:
                    if "=" in line:
                        key, _, value = line.strip().partition("=")
                        out[key] = value.strip().strip('"')
                return out
        except OSError:
            continue
    return {}


def _mem_total_mib() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _ipv4_of(ifname: str) -> str | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", ifname[:15].encode()))  # SIOCGIFADDR
        return socket.inet_ntoa(packed[20:24])
    except OSError:
        return None
    finally:
        sock.close()


def _interfaces() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    v4: dict[str, list[str]] = {}
    v6: dict[str, list[str]] = {}
    try:
        names = sorted(os.listdir("/sys/class/net"))
    except OSError:
        names = []
    for name in names:
        addr = _ipv4_of(name)
        v4[name] = [addr] if addr else []
        v6.setdefault(name, [])
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6:
                    addr = str(ipaddress.IPv6Address(int(parts[0], 16)))
                    v6.setdefault(parts[5], []).append(addr)
    except OSError:
        pass
    return v4, v6


def core_grains() -> dict[str, Any]:
    rel = _os_release()
    os_id = rel.get("ID", "").lower()
    version = rel.get("VERSION_ID", "")
    uname = platform.uname()
    v4, v6 = _interfaces()
    fqdn = socket.getfqdn()
    host = socket.gethostname().split(".")[0]
    ipv4 = sorted({a for addrs in v4.values() for a in addrs})
    ipv6 = sorted({a for addrs in v6.values() for a in addrs})
    os_name = _OS_NAME.get(os_id, rel.get("NAME", uname.system))
    grains: dict[str, Any] = {
        "os": os_name,
        "os_family": _OS_FAMILY.get(os_id, _OS_FAMILY.get(rel.get("ID_LIKE", "").split(" ")[0], os_name)),
        "osfullname": rel.get("NAME", uname.system),
        "osrelease": version,
        "oscodename": rel.get("VERSION_CODENAME", ""),
        "osfinger": f"{rel.get('NAME', uname.system).split(' ')[0]}-{version.split('.')[0]}" if version else "",
        "osmajorrelease": int(version.split(".")[0]) if version.split(".")[0].isdigit() else version,
        "kernel": uname.system,
        "kernelrelease": uname.release,
        "cpuarch": uname.machine,
        "osarch": {"x86_64": "amd64", "aarch64": "arm64"}.get(uname.machine, uname.machine),
        "nodename": uname.node,
        "host": host,
        "fqdn": fqdn,
        "domain": fqdn.partition(".")[2],
        "localhost": socket.gethostname(),
        "ipv4": ipv4,
        "ipv6": ipv6,
        "ip4_interfaces": v4,
        "ip6_interfaces": v6,
        "ip_interfaces": {k: v4.get(k, []) + v6.get(k, []) for k in set(v4) | set(v6)},
        "num_cpus": os.cpu_count() or 1,
        "mem_total": _mem_total_mib(),
        "shell": os.environ.get("SHELL", "/bin/sh"),
        "path": os.environ.get("PATH", ""),
        "pythonversion": list(sys.version_info[:3]) + [sys.version_info.releaselevel, sys.version_info.serial],
        "pythonexecutable": sys.executable,
        "init": "systemd" if os.path.isdir("/run/systemd/system") else "unknown",
        "username": _username(),
        "uid": os.geteuid(),
        "gid": os.getegid(),
        "saltpan_version": "0.1.0",
    }
    try:
        with open("/etc/machine-id", encoding="ascii") as fh:
            grains["machine_id"] = fh.read().strip()
    except OSError:
        pass
    return grains


def _username() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def grains_file(opts: Mapping[str, Any]) -> str | None:
    """The file of the minion's own grains (grains.setval writes it): ``grains_file``, else Salt's
    ``grains`` beside the config file; None without either."""
    path = opts.get("grains_file")
    if not path and opts.get("conf_file"):
        path = os.path.join(os.path.dirname(str(opts["conf_file"])), "grains")  # Salt's <confdir>/grains
    return str(path) if path else None


class GrainsError(ConfigError):
    """A grains file that cannot be used: missing (when configured), not YAML, or not a mapping."""


def read_grains_file(path: str) -> dict[str, Any]:
    """The grains of a YAML/JSON grains file: a mapping (an empty file: none); GrainsError names the
    file (and the line of a syntax error) and says what to do."""
    from runtime.config import load_data_file

    data = load_data_file(path, "grains", GrainsError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise GrainsError(f"{path}: a grains file must be a mapping of grain: value, got a "
                          f"{type(data).__name__}; write it as `role: web` lines")
    return data


def grains_file_data(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The grains file of a minion config: ``grains_file`` (which must exist), else Salt's
    ``<config dir>/grains`` when there is one."""
    path = opts.get("grains_file")
    if path:
        if not os.path.exists(str(path)):
            raise GrainsError(f"grains_file {path} (config {opts.get('conf_file') or 'option'}) does not exist: "
                              "create it, or remove grains_file from the config")
        return read_grains_file(str(path))
    if opts.get("conf_file"):
        default = os.path.join(os.path.dirname(str(opts["conf_file"])), "grains")  # Salt's <confdir>/grains
        if os.path.isfile(default):
            return read_grains_file(default)
    return {}


def minion_grains(opts: Mapping[str, Any], minion_id: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Core grains, then the grains file, then config `grains`, then extra; `id` always the minion id.
    Raises GrainsError for a grains file that cannot be used."""
    grains = core_grains()
    grains.update(grains_file_data(opts))
    grains.update(opts.get("grains") or {})
    if extra:
        grains.update(extra)
    grains["id"] = minion_id
    return grains
