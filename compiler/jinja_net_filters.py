"""Salt's network Jinja filters (salt/utils/network.py): is_ip, ipaddr, ipv4, ipv6, ip_host,
network_hosts, network_size, ipwrap, filter_by_networks, gen_mac, mac_str_to_bytes."""

from __future__ import annotations

import ipaddress
import random
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# option name -> test of an address (an ipaddress object) of IP version v
_OPTIONS: dict[str, Callable[[Any, int], bool]] = {
    "global": lambda ip, v: not ip.is_private,
    "link-local": lambda ip, v: ip.is_link_local,
    "linklocal": lambda ip, v: ip.is_link_local,
    "ll": lambda ip, v: ip.is_link_local,
    "link_local": lambda ip, v: ip.is_link_local,
    "loopback": lambda ip, v: ip.is_loopback,
    "lo": lambda ip, v: ip.is_loopback,
    "multicast": lambda ip, v: ip.is_multicast,
    "private": lambda ip, v: ip.is_private,
    "public": lambda ip, v: not ip.is_private,
    "reserved": lambda ip, v: ip.is_reserved,
    "site-local": lambda ip, v: v == 6 and ip.is_site_local,
    "sl": lambda ip, v: v == 6 and ip.is_site_local,
    "site_local": lambda ip, v: v == 6 and ip.is_site_local,
    "unspecified": lambda ip, v: ip.is_unspecified,
}


def _ip_options(ip_obj: Any, version: int, options: str | None = None) -> str | None:
    if not options:
        return str(ip_obj)
    wanted = [option.strip() for option in options.split(",")]
    for option, test in _OPTIONS.items():
        if option in wanted and not test(ip_obj, version):
            return None
    return str(ip_obj)


def _is_ipv(ip_addr: Any, version: int, options: str | None = None) -> str | None:
    try:
        ip_obj: Any = ipaddress.ip_address(ip_addr)
    except ValueError:
        try:
            ip_obj = ipaddress.ip_interface(ip_addr)
        except ValueError:
            return None
    if ip_obj.version != version:
        return None
    return _ip_options(ip_obj, version, options)


def _ipv_filter(value: Any, version: int, options: str | None = None) -> Any:
    if isinstance(value, (str, bytes)):
        return _is_ipv(value, version, options)
    if isinstance(value, (list, tuple, types.GeneratorType)):
        return [_is_ipv(addr, version, options) for addr in value if _is_ipv(addr, version, options) is not None]
    return None


def is_ipv4(ip_addr: Any, options: str | None = None) -> bool:
    return isinstance(_is_ipv(ip_addr, 4, options), str)


def is_ipv6(ip_addr: Any, options: str | None = None) -> bool:
    return isinstance(_is_ipv(ip_addr, 6, options), str)


def is_ip(ip_addr: Any, options: str | None = None) -> bool:
    return is_ipv4(ip_addr, options) or is_ipv6(ip_addr, options)


def ipv4(value: Any, options: str | None = None) -> Any:
    return _ipv_filter(value, 4, options)


def ipv6(value: Any, options: str | None = None) -> Any:
    return _ipv_filter(value, 6, options)


def ipaddr(value: Any, options: str | None = None) -> Any:
    v4, v6 = ipv4(value, options), ipv6(value, options)
    if v4 is None or v6 is None:
        return v4 or v6
    return v4 + v6


def _filter_ipaddr(value: Any, options: str | None, version: int | None = None) -> Sequence[Any] | None:
    if version == 4:
        out = ipv4(value, options)
    elif version == 6:
        out = ipv6(value, options)
    else:
        out = ipaddr(value, options)
    if not out:
        return None
    return out if isinstance(out, (list, tuple)) else [out]


def ip_host(value: Any, options: str | None = None, version: int | None = None) -> Any:
    found = _filter_ipaddr(value, options, version)
    if not found:
        return None
    if not isinstance(value, (list, tuple, types.GeneratorType)):
        return str(ipaddress.ip_interface(found[0]))
    return [str(ipaddress.ip_interface(ip)) for ip in found]


def _hosts(entry: str) -> list[str]:
    return [str(host) for host in ipaddress.ip_network(entry, strict=False).hosts()]


def network_hosts(value: Any, options: str | None = None, version: int | None = None) -> Any:
    found = _filter_ipaddr(value, options, version)
    if not found:
        return None
    if not isinstance(value, (list, tuple, types.GeneratorType)):
        return _hosts(found[0])
    return [_hosts(ip) for ip in found]


def network_size(value: Any, options: str | None = None, version: int | None = None) -> Any:
    found = _filter_ipaddr(value, options, version)
    if not found:
        return None
    if not isinstance(value, (list, tuple, types.GeneratorType)):
        return ipaddress.ip_network(found[0], strict=False).num_addresses
    return [ipaddress.ip_network(ip, strict=False).num_addresses for ip in found]


def _bracket(addr: Any) -> str:
    ip = ipaddress.ip_address(str(addr).lstrip("[").rstrip("]"))
    return f"[{ip}]" if ip.version == 6 else str(ip)


def ipwrap(data: Any) -> Any:
    if isinstance(data, (list, tuple)):
        return [_bracket(el) if _is_ipv(el, 6) else el for el in data]
    return _bracket(data) if _is_ipv(data, 6) else data


def filter_by_networks(values: Any, networks: Any) -> Any:
    if networks is None:
        return values
    nets = [ipaddress.ip_network(network) for network in networks]

    def keep(ips: Any) -> list[Any]:
        return [ip for ip in ips for net in nets if ipaddress.ip_address(ip) in net]

    if isinstance(values, Mapping):
        return {iface: keep(values[iface]) for iface in values}
    if isinstance(values, Sequence):
        return keep(values)
    raise ValueError(f"Do not know how to filter a {type(values)}")


def gen_mac(prefix: str = "AC:DE:48") -> str:
    octets = [random.randint(0, 255) for _ in range(3)]  # noqa: S311 - Salt's gen_mac is not for secrets
    return f"{prefix}:{octets[0]:02X}:{octets[1]:02X}:{octets[2]:02X}"


def mac_str_to_bytes(mac_str: str) -> bytes:
    if len(mac_str) == 17:
        mac_str = mac_str.replace(mac_str[2], "")
    elif len(mac_str) != 12:
        raise ValueError("Invalid MAC address")
    return bytes(int(mac_str[s:s + 2], 16) for s in range(0, 12, 2))


FILTERS: dict[str, Any] = {
    "is_ip": is_ip,
    "is_ipv4": is_ipv4,
    "is_ipv6": is_ipv6,
    "ipaddr": ipaddr,
    "ipv4": ipv4,
    "ipv6": ipv6,
    "ip_host": ip_host,
    "network_hosts": network_hosts,
    "network_size": network_size,
    "ipwrap": ipwrap,
    "filter_by_networks": filter_by_networks,
    "gen_mac": gen_mac,
    "mac_str_to_bytes": mac_str_to_bytes,
}
