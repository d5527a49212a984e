"""The ``host`` state module: names for addresses in the hosts file (present, absent, only).

As Salt 3008's (``hosts`` module): the file (config option ``hosts.file``, default
``/etc/hosts``) is read into ``address: names # comment`` entries, lines of one address merged,
comment lines kept, and written back in that form (atomically, mode and owner kept).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "only", "present"]

DEFAULT_FILE = "/etc/hosts"


class Hosts:
    """The hosts file as ordered entries: address -> {"aliases": [...], "comment": str}, and comment lines."""

    def __init__(self, path: str):
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        self._comments = 0
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                for raw in handle:
                    self._parse(raw.strip())

    def _parse(self, line: str) -> None:
        if not line:
            return
        if line.startswith("#"):
            self.entries[f"comment-{self._comments}"] = {"line": line}
            self._comments += 1
            return
        comment = None
        if "#" in line:
            line, comment = line[:line.index("#")].strip(), line[line.index("#") + 1:].lstrip()
        comps = line.split()
        entry = self.entries.setdefault(comps[0], {"aliases": []})
        entry["aliases"].extend(comps[1:])
        if comment:
            entry["comment"] = comment

    def addresses(self) -> dict[str, dict[str, Any]]:
        return {ip: e for ip, e in self.entries.items() if not ip.startswith("comment-")}

    def has(self, ip: str, name: str) -> bool:
        return name in self.entries.get(ip, {}).get("aliases", [])

    def add(self, ip: str, name: str) -> None:
        entry = self.entries.setdefault(ip, {"aliases": []})
        if name not in entry["aliases"]:
            entry["aliases"].append(name)

    def remove(self, ip: str, name: str) -> None:
        entry = self.entries.get(ip)
        if entry is None:
            return
        entry["aliases"] = [a for a in entry["aliases"] if a != name]
        if not entry["aliases"]:
            del self.entries[ip]

    def text(self) -> str:
        lines = []
        for ip, entry in self.entries.items():
            if ip.startswith("comment-"):
                lines.append(entry["line"])
            elif "comment" in entry:
                lines.append(f"{ip}\t\t{' '.join(entry['aliases'])}\t\t# {entry['comment']}")
            else:
                lines.append(f"{ip}\t\t{' '.join(entry['aliases'])}")
        return "".join(f"{line.strip()}\n" for line in lines if line.strip())

    def save(self) -> None:
        data = self.text().encode()
        if os.path.exists(self.path):
            F.write_preserving(self.path, data)
        else:
            F.atomic_write(self.path, data, 0o644)


def _path(ctx: StateContext) -> str:
    value = ctx.opts.get("hosts.file") if isinstance(ctx.opts, Mapping) else None
    return str(value or DEFAULT_FILE)


def _valid_ip(addr: str) -> bool:
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        return False
    return True


def present(ctx: StateContext, name: str, ip: Any, comment: str = "", clean: Any = False,
            **kwargs: Any) -> dict[str, Any]:
    """``name`` is a name of each address in ``ip`` (``clean``: and of no other)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    ips = [str(i) for i in (ip if isinstance(ip, list) else [ip])]
    hosts = Hosts(_path(ctx))
    known = hosts.addresses()
    comments: list[str] = []
    to_add: list[str] = []
    to_remove: list[str] = []
    set_comment: list[str] = []
    for addr in ips:
        if addr not in known:
            if not _valid_ip(addr):
                ret["result"] = False
                comments.append(f"Invalid IP Address for {name} ({addr})")
                continue
            to_add.append(addr)
            if comment:
                set_comment.append(addr)
        elif name in known[addr]["aliases"]:
            if comment and known[addr].get("comment") != comment:
                set_comment.append(addr)
            else:
                comments.append(f"Host {name} ({addr}) already present")
        else:
            to_add.append(addr)
            if comment:
                set_comment.append(addr)
    for addr, entry in known.items():
        if addr not in ips and name in entry["aliases"]:
            if clean:
                to_remove.append(addr)
            else:
                ret.setdefault("warnings", []).append(
                    f"Host {name} present for IP address {addr}. To get rid of this warning, either run this state "
                    f"with 'clean' set to True to remove {name} from {addr}, or add {addr} to the 'ip' argument.")
    for addr in to_add:
        if ctx.test:
            ret["result"] = None
            comments.append(f"Host {name} ({addr}) would be added")
        else:
            hosts.add(addr, name)
            comments.append(f"Added host {name} ({addr})")
        ret["changes"].setdefault("added", {}).setdefault(addr, []).append(name)
    for addr in set_comment:
        if ctx.test:
            comments.append(f"Comment for {addr} ({comment}) would be added")
        else:
            hosts.entries.setdefault(addr, {"aliases": []})["comment"] = comment
            comments.append(f"Set comment for host {addr} ({comment})")
        ret["changes"].setdefault("comment_added", {}).setdefault(addr, []).append(comment)
    for addr in to_remove:
        if ctx.test:
            ret["result"] = None
            comments.append(f"Host {name} ({addr}) would be removed")
        else:
            hosts.remove(addr, name)
            comments.append(f"Removed host {name} ({addr})")
        ret["changes"].setdefault("removed", {}).setdefault(addr, []).append(name)
    if ret["changes"] and not ctx.test:
        try:
            hosts.save()
        except OSError as exc:
            return dict(ret, result=False, changes={}, comment=f"Failed to write {hosts.path}: {exc}")
    ret["comment"] = "\n".join(comments)
    return ret


def absent(ctx: StateContext, name: str, ip: Any, **kwargs: Any) -> dict[str, Any]:
    """``name`` is not a name of any address in ``ip``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None, "comment": ""}
    hosts = Hosts(_path(ctx))
    comments = []
    for addr in (str(i) for i in (ip if isinstance(ip, list) else [ip])):
        if not hosts.has(addr, name):
            ret["result"] = True
            comments.append(f"Host {name} ({addr}) already absent")
        elif ctx.test:
            comments.append(f"Host {name} ({addr}) needs to be removed")
        else:
            hosts.remove(addr, name)
            ret["changes"] = {"host": name}
            ret["result"] = True
            comments.append(f"Removed host {name} ({addr})")
    if ret["changes"]:
        try:
            hosts.save()
        except OSError as exc:
            return dict(ret, result=False, changes={}, comment=f"Failed to remove host: {exc}")
    ret["comment"] = "\n".join(comments)
    return ret


def only(ctx: StateContext, name: str, hostnames: Any, **kwargs: Any) -> dict[str, Any]:
    """The address ``name`` has exactly ``hostnames``, in this order."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None, "comment": ""}
    wanted = [h.strip() for h in ([hostnames] if isinstance(hostnames, str) else hostnames)]
    hosts = Hosts(_path(ctx))
    old = " ".join(hosts.entries.get(name, {}).get("aliases", []))
    new = " ".join(wanted)
    if old == new:
        return dict(ret, result=True, comment=f'IP address {name} already set to "{new}"')
    if ctx.test:
        return dict(ret, comment=f'Would change {name} from "{old}" to "{new}"')
    if wanted:
        hosts.entries.setdefault(name, {"aliases": []})["aliases"] = wanted
    else:
        hosts.entries.pop(name, None)
    try:
        hosts.save()
    except OSError as exc:
        return dict(ret, result=False, comment=f'hosts.set_host failed to change {name} from "{old}" to "{new}": {exc}')
    return dict(ret, result=True, changes={name: {"old": old, "new": new}},
                comment=f'successfully changed {name} from "{old}" to "{new}"')
