"""pkg: installed packages of this host (version, list_pkgs) and version comparison (version_cmp).

Installed packages are read with dpkg-query (Debian family) or rpm (RedHat/Suse family); offline
(and on a host without either tool) nothing is installed: version() is '' and list_pkgs() is {}.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import pure, reads_host

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _installed(env: ModuleEnv) -> dict[str, list[str]]:
    if shutil.which("dpkg-query"):
        argv = ["dpkg-query", "--showformat=${Status} ${Package} ${Version}\n", "-W"]
        wanted = "install ok installed"
    elif shutil.which("rpm"):
        argv = ["rpm", "-qa", "--queryformat", "installed %{NAME} %|EPOCH?{%{EPOCH}:}|%{VERSION}-%{RELEASE}\n"]
        wanted = "installed"
    else:
        return {}
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    pkgs: dict[str, list[str]] = {}
    for line in out.splitlines():
        if not line.startswith(wanted + " "):
            continue
        parts = line[len(wanted) + 1:].split()
        if len(parts) >= 2:
            pkgs.setdefault(parts[0], []).append(parts[1])
    return pkgs


def _version_answer(pkgs: dict[str, list[str]], names: tuple[str, ...], versions_as_list: bool) -> Any:
    ret: dict[str, Any] = {}
    globbed = False
    for name in names:
        if "*" in name:
            globbed = True
            for found in fnmatch.filter(list(pkgs), name):
                ret[found] = pkgs.get(found, [])
        else:
            ret[name] = pkgs.get(name, [])
    if not versions_as_list:
        ret = {k: ",".join(v) for k, v in ret.items()}
    if len(ret) == 1 and not globbed:
        return next(iter(ret.values()))
    return ret


def _absent_version(env: ModuleEnv, *names: str, **kwargs: Any) -> Any:
    """'' for one package, {name: ''} for several (nothing is installed)."""
    return _version_answer({}, names, bool(kwargs.get("versions_as_list", False)))


def _absent_list(env: ModuleEnv, *args: Any, **kwargs: Any) -> dict:
    """returns {}."""
    return {}


@reads_host(absent=_absent_version)
def version(env: ModuleEnv, *names: str, **kwargs: Any) -> Any:
    """The installed version of a package ('' when not installed); a dict for several names or a glob."""
    return _version_answer(_installed(env), names, bool(kwargs.get("versions_as_list", False)))


@reads_host(absent=_absent_list)
def list_pkgs(env: ModuleEnv, versions_as_list: bool = False, **kwargs: Any) -> dict[str, Any]:
    """{package: version} of the installed packages."""
    pkgs = _installed(env)
    if versions_as_list:
        return pkgs
    return {k: ",".join(v) for k, v in pkgs.items()}


# -- Debian version comparison (dpkg's algorithm) --------------------------------------------------

def _order(ch: str) -> int:
    if ch == "~":
        return -1
    if ch.isdigit():
        return 0
    if ch.isalpha():
        return ord(ch)
    return ord(ch) + 256


def _compare_part(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) else 0
            bc = _order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def _split(version: str) -> tuple[int, str, str]:
    epoch = 0
    if ":" in version:
        head, version = version.split(":", 1)
        epoch = int(head) if head.isdigit() else 0
    upstream, _, revision = version.rpartition("-") if "-" in version else (version, "", "")
    return epoch, upstream, revision


def debian_compare(a: str, b: str) -> int:
    ea, ua, ra = _split(a)
    eb, ub, rb = _split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    for x, y in ((ua, ub), (ra, rb)):
        diff = _compare_part(x, y)
        if diff:
            return -1 if diff < 0 else 1
    return 0


def _loose(version: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.findall(r"\d+|[a-zA-Z]+", version)]


@pure
def version_cmp(env: ModuleEnv, pkg1: Any, pkg2: Any, ignore_epoch: bool = False, **kwargs: Any) -> int | None:
    """-1, 0 or 1 as pkg1 is older than, equal to or newer than pkg2 (package version rules of the
    minion's os_family: dpkg's for Debian, else a loose numeric comparison)."""
    def norm(x: Any) -> str:
        return str(x).split(":", 1)[-1] if ignore_epoch else str(x)

    a, b = norm(pkg1), norm(pkg2)
    if str(env.grains.get("os_family", "")) == "Debian":
        return debian_compare(a, b)
    la, lb = _loose(a), _loose(b)
    try:
        return (la > lb) - (la < lb)
    except TypeError:
        return None
