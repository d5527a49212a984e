"""network: address arithmetic (calc_net, ip_in_subnet, convert_cidr ...), this minion's addresses,
and its interfaces.

The minion's addresses (ip_addrs, ip_addrs6, in_subnet) come from its grains (ip4_interfaces,
ip6_interfaces, ipv4, ipv6), which saltpan collects from the interfaces: the same answer on a minion
and in an offline compile (and a static ``ipv4`` grain is what the mine then publishes).
interfaces, hw_addr, interface, interface_ip and subnets read the kernel's view (`ip addr show`).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, pure, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.network")


@pure
def calc_net(env: ModuleEnv, ip_addr: str, netmask: str | None = None) -> str:
    """The network of an address with a prefix or netmask: '10.1.2.3/24' -> '10.1.2.0/24'."""
    if netmask is not None:
        ip_addr = f"{ip_addr}/{netmask}"
    return str(ipaddress.ip_network(ip_addr, strict=False))


def _in_subnet(cidr: str, addrs: list[str]) -> bool:
    try:
        network = ipaddress.ip_network(cidr)
    except ValueError:
        log.error("Invalid CIDR '%s'", cidr)
        return False
    return any(ipaddress.ip_address(item) in network for item in addrs)


@pure
def ip_in_subnet(env: ModuleEnv, ip_addr: str, cidr: str) -> bool:
    """True when ip_addr is in the network cidr."""
    return _in_subnet(cidr, [ip_addr])


@pure
def in_subnet(env: ModuleEnv, cidr: str) -> bool:
    """True when one of this minion's addresses is in the network cidr."""
    return _in_subnet(cidr, _addrs(env, None, False, 4) + _addrs(env, None, False, 6))


@pure
def convert_cidr(env: ModuleEnv, cidr: str) -> dict[str, str]:
    """{network, netmask, broadcast} of a CIDR."""
    net = ipaddress.ip_network(calc_net(env, cidr))
    return {"network": str(net.network_address), "netmask": str(net.netmask),
            "broadcast": str(net.broadcast_address)}


@pure
def is_private(env: ModuleEnv, ip_addr: str) -> bool:
    """True for a private address."""
    return ipaddress.ip_address(ip_addr).is_private


@pure
def is_loopback(env: ModuleEnv, ip_addr: str) -> bool:
    """True for a loopback address."""
    return ipaddress.ip_address(ip_addr).is_loopback


@pure
def reverse_ip(env: ModuleEnv, ip_addr: str) -> str:
    """The reverse-DNS name of an address."""
    return ipaddress.ip_address(ip_addr).reverse_pointer


@pure
def iphexval(env: ModuleEnv, ip: str) -> str:
    """An IPv4 address in hexadecimal ('10.0.0.1' -> '0A000001')."""
    return "".join(f"{int(x):02X}" for x in ip.split("."))


def _addrs(env: ModuleEnv, interface: str | None, include_loopback: bool, version: int) -> list[str]:
    grains = env.grains
    if interface:
        by_iface = grains.get(f"ip{version}_interfaces") or {}
        found = list(by_iface.get(interface) or [])
    else:
        found = list(grains.get(f"ipv{version}") or [])
    out = set()
    for item in found:
        try:
            addr = ipaddress.ip_address(str(item).split("%")[0])
        except ValueError:
            continue
        if addr.version == version and (include_loopback or not addr.is_loopback):
            out.add(addr)
    return [str(a) for a in sorted(out)]


@pure
def ip_addrs(env: ModuleEnv, interface: str | None = None, include_loopback: bool = False, cidr: str | None = None,
             type: str | None = None) -> list[str]:  # noqa: A002 - Salt's argument name
    """This minion's IPv4 addresses (from its grains), optionally within cidr, public or private."""
    addrs = _addrs(env, interface, include_loopback, 4)
    if cidr:
        return [a for a in addrs if _in_subnet(cidr, [a])]
    if type == "public":
        return [a for a in addrs if not ipaddress.ip_address(a).is_private]
    if type == "private":
        return [a for a in addrs if ipaddress.ip_address(a).is_private]
    return addrs


@pure
def ip_addrs6(env: ModuleEnv, interface: str | None = None, include_loopback: bool = False,
              cidr: str | None = None) -> list[str]:
    """This minion's IPv6 addresses (from its grains), optionally within cidr."""
    addrs = _addrs(env, interface, include_loopback, 6)
    return [a for a in addrs if _in_subnet(cidr, [a])] if cidr else addrs


@pure
def get_hostname(env: ModuleEnv) -> str:
    """This minion's host name (its `host` grain)."""
    return str(env.grains.get("host") or env.grains.get("localhost") or "")


@pure
def get_fqdn(env: ModuleEnv) -> str:
    """This minion's fully qualified name (its `fqdn` grain)."""
    return str(env.grains.get("fqdn") or "")


# -- this host's interfaces, as the kernel reports them (`ip addr show`) --------------------------


def _ip_addr_show() -> str:
    import shutil
    import subprocess

    ip = shutil.which("ip")
    if ip is None:
        from runtime.modules import CommandError

        raise CommandError("the ip command (iproute2) is not installed on this minion")
    return subprocess.run([ip, "addr", "show"], capture_output=True, text=True, timeout=60, check=False).stdout


def parse_ip_addr(text: str) -> dict[str, Any]:
    """Salt's interfaces structure from `ip addr show`: {iface: {up, hwaddr, inet: [{address,
    netmask, broadcast, label}], inet6: [{address, prefixlen, scope}], secondary: [...]}}."""
    out: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for line in text.splitlines():
        if line and not line[0].isspace():
            head = line.split(": ")
            if len(head) < 3:
                continue
            name = head[1].split("@")[0]
            data = out.setdefault(name, {})
            data["up"] = "UP" in head[2].split(">")[0].strip("<").split(",")
            continue
        cols = line.split()
        if len(cols) < 2:
            continue
        kind, value = cols[0], cols[1]
        if kind.startswith("link/"):
            if kind != "link/none":
                data["hwaddr"] = value
        elif kind in ("inet", "inet6"):
            address, _, prefix = value.partition("/")
            scope = cols[cols.index("scope") + 1] if "scope" in cols else None
            if kind == "inet":
                entry: dict[str, Any] = {
                    "address": address,
                    "netmask": str(ipaddress.ip_network(f"0.0.0.0/{prefix or 32}").netmask),
                    "broadcast": cols[cols.index("brd") + 1] if "brd" in cols else None,
                    "label": cols[-1]}
            else:
                entry = {"address": address, "prefixlen": prefix or "128", "scope": scope}
            if "secondary" in cols:
                data.setdefault("secondary", []).append({"type": kind, **entry})
            else:
                data.setdefault(kind, []).append(entry)
    return out


@reads_host(absent=constant({}))
def interfaces(env: ModuleEnv) -> dict[str, Any]:
    """This host's network interfaces: {name: {up, hwaddr, inet: [...], inet6: [...]}}."""
    return parse_ip_addr(_ip_addr_show())


@reads_host(absent=constant(""))
def hw_addr(env: ModuleEnv, iface: str) -> str:
    """The hardware (MAC) address of an interface ('Interface "x" not in available interfaces' when
    there is none)."""
    found = interfaces(env).get(iface)
    if found is None:
        return f'Interface "{iface}" not in available interfaces: "{", ".join(sorted(interfaces(env)))}"'
    return str(found.get("hwaddr", ""))


@reads_host(absent=constant(""))
def interface(env: ModuleEnv, iface: str) -> Any:
    """The IPv4 addresses of an interface ([{address, netmask, broadcast, label}])."""
    found = interfaces(env).get(iface)
    if found is None:
        return f'Interface "{iface}" not in available interfaces: "{", ".join(sorted(interfaces(env)))}"'
    return list(found.get("inet", []))


@reads_host(absent=constant(""))
def interface_ip(env: ModuleEnv, iface: str) -> str:
    """The first IPv4 address of an interface ('' when it has none)."""
    found = interface(env, iface)
    return str(found[0]["address"]) if isinstance(found, list) and found else ""


@reads_host(absent=constant([]))
def subnets(env: ModuleEnv, interfaces: Any = None) -> list[str]:
    """The IPv4 networks this host's interfaces are on (not loopback), sorted."""
    out = set()
    wanted = None if not interfaces else (interfaces if isinstance(interfaces, list) else [interfaces])
    for name, data in parse_ip_addr(_ip_addr_show()).items():
        if wanted is not None and name not in wanted:
            continue
        for entry in data.get("inet", []):
            net = ipaddress.ip_network(f"{entry['address']}/{entry['netmask']}", strict=False)
            if not net.is_loopback:
                out.add(str(net))
    return sorted(out)
