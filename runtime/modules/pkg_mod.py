"""pkg: the packages of this host: what is installed (version, list_pkgs), what the repositories
offer (latest_version, upgrade_available, list_upgrades, refresh_db), installing and removing
(install, remove, purge), and version comparison (version_cmp).

Installed packages are read with dpkg-query (Debian family) or rpm (RedHat/Suse family); offline
(and on a host without either tool) nothing is installed: version() is '' and list_pkgs() is {}.
Installing and removing go through the same package-manager code as the pkg states
(runtime/states/pkg.py: apt-get or dnf), with Salt's return shapes.  ``pkg.upgrade`` (upgrading
every package of the host at once) is not provided: use ``pkg.install`` of the packages, or the
``pkg.latest`` state.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, pure, reads_host, runs_command

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


# -- installing and removing (Salt's aptpkg / yumpkg functions) -------------------------------------


def _manager() -> Any:
    """This host's package manager (apt+dpkg or dnf+rpm), shared with the pkg states."""
    from runtime.states import pkg as pkg_state

    mgr = pkg_state.backend()
    if mgr is None:
        raise _error("No supported package manager found (apt/dpkg or dnf/rpm)")
    return mgr


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


def _flat(pkgs: dict[str, list[str]]) -> dict[str, str]:
    return {name: ",".join(versions) for name, versions in pkgs.items()}


def _compare(old: dict[str, str], new: dict[str, str]) -> dict[str, dict[str, str]]:
    """Salt's ``{package: {old, new}}`` for every package whose version changed."""
    return {name: {"old": old.get(name, ""), "new": new.get(name, "")}
            for name in sorted(set(old) | set(new)) if old.get(name, "") != new.get(name, "")}


def _targets(name: Any, pkgs: Any, version: Any) -> dict[str, str | None]:
    """{package: version or None} from Salt's name/version or pkgs arguments."""
    if pkgs:
        if isinstance(pkgs, str):
            import yaml

            pkgs = yaml.safe_load(pkgs)
        if not isinstance(pkgs, list):
            raise _error("Invalidly formatted 'pkgs' parameter: expected a list of names or {name: version}")
        out: dict[str, str | None] = {}
        for item in pkgs:
            if isinstance(item, dict):
                out.update({str(k): None if v in (None, "") else str(v) for k, v in item.items()})
            else:
                out[str(item)] = None
        return out
    if not name:
        raise _error("No package name given (name or pkgs)")
    return {str(n).strip(): None if version in (None, "") else str(version) for n in str(name).split(",") if n}


def _source_files(env: ModuleEnv, sources: Any, suffix: str, staging: Any) -> dict[str, str]:
    """{package: local file} from Salt's sources list (absolute paths, file:// or salt:// URLs)."""
    from runtime.states import StateContext, _pkg_sources

    def fetch(url: str, saltenv: str) -> tuple[bytes, str, int | None] | None:
        source = env.state_source
        if source is None:
            return None
        path, _, query = url[len("salt://"):].partition("?")
        found = source.fetch(query.split("saltenv=", 1)[1] if "saltenv=" in query else saltenv, path)
        return None if found is None else (found.data, found.display, found.mode)

    ctx = StateContext(opts=env.opts, grains=env.grains, pillar=env.pillar, fetch_file=fetch)
    try:
        return {entry.name: staging.local_path(ctx, entry, suffix) for entry in _pkg_sources.parse(sources)}
    except _pkg_sources.SourcesError as exc:
        raise _error(str(exc)) from None


def _install_error(changes: dict[str, Any], errors: list[str]) -> Exception:
    import yaml

    shown = yaml.safe_dump({"changes": changes, "errors": errors}, default_flow_style=False).rstrip()
    return _error(f"Problem encountered installing package(s). Additional info follows:\n\n{shown}")


@runs_command()
def install(env: ModuleEnv, name: str | None = None, refresh: bool = False, fromrepo: str | None = None,
            skip_verify: bool = False, debconf: Any = None, pkgs: Any = None, sources: Any = None,
            reinstall: bool = False, downloadonly: bool = False, version: str | None = None,
            **kwargs: Any) -> dict[str, Any]:
    """Install packages (name[,name...], pkgs=[name or {name: version}], or sources=[{name: file}]);
    returns {package: {old, new}} for every package whose version changed (dependencies included).
    An error lists what changed and what failed."""
    from runtime import cmdrun
    from runtime.states import _pkg_sources
    from runtime.states.pkg import PkgError

    mgr = _manager()
    before = _flat(_installed(env))
    errors: list[str] = []
    try:
        if _truthy(refresh):
            mgr.refresh()
        if sources:
            with _pkg_sources.Staging() as staging:
                files = _source_files(env, sources, mgr.file_suffix, staging)
                mgr.install_files(list(files.values()))
        else:
            targets = _targets(name, pkgs, version)
            if not _truthy(reinstall):
                targets = {n: v for n, v in targets.items() if before.get(n) is None or (v and before.get(n) != v)}
            if targets:
                mgr.install(targets, fromrepo)
    except (PkgError, cmdrun.CommandError, OSError) as exc:
        errors = re.findall(r"E: [^\n]*", str(exc)) or [str(exc)]
    changes = _compare(before, _flat(_installed(env)))
    if errors:
        raise _install_error(changes, errors)
    return changes


def _uninstall(env: ModuleEnv, name: Any, pkgs: Any, purge: bool) -> dict[str, Any]:
    from runtime import cmdrun
    from runtime.states.pkg import PkgError

    mgr = _manager()
    before = _flat(_installed(env))
    wanted = list(_targets(name, pkgs, None))
    left_before = {n: v for n, v in mgr.leftovers(wanted).items() if v} if purge else {}
    targets = [n for n in wanted if n in before or n in left_before]
    if not targets:
        return {}
    error = ""
    try:
        mgr.remove(targets, purge)
    except (PkgError, cmdrun.CommandError) as exc:
        error = str(exc)
    installed = _compare(before, _flat(_installed(env)))
    if purge and mgr.name == "apt":
        left_after = {n: v for n, v in mgr.leftovers(wanted).items() if v}
        changes: dict[str, Any] = {"removed": _compare(left_before, left_after), "installed": installed}
    else:
        changes = installed
    if error:
        import yaml

        shown = yaml.safe_dump({"changes": changes, "errors": [error]}, default_flow_style=False).rstrip()
        raise _error(f"Problem encountered removing package(s). Additional info follows:\n\n{shown}")
    return changes


@runs_command()
def remove(env: ModuleEnv, name: str | None = None, pkgs: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Remove packages (configuration files stay); {package: {old, new: ''}} for each removed."""
    return _uninstall(env, name, pkgs, purge=False)


@runs_command()
def purge(env: ModuleEnv, name: str | None = None, pkgs: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Remove packages and their configuration files; with apt, {removed: {...}, installed: {...}}
    (packages whose leftover configuration went, and packages removed), as Salt's aptpkg."""
    return _uninstall(env, name, pkgs, purge=True)


@runs_command()
def refresh_db(env: ModuleEnv, cache_valid_time: int = 0, failhard: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Update the package index: {source: True (fetched), None (unchanged), False (ignored or failed)}.
    cache_valid_time: skip when the index is younger than that many seconds; failhard: an error when
    a source failed."""
    import os
    import time

    from runtime import cmdrun

    mgr = _manager()
    if mgr.name != "apt":
        mgr.refresh()
        return {}
    if cache_valid_time:
        try:
            if os.stat("/var/lib/apt/lists").st_mtime + float(cache_valid_time) > time.time():
                return {}
        except OSError:
            pass
    res = cmdrun.run(["apt-get", "-q", "update"], cwd="/", env={"LC_ALL": "C"}, timeout=600)
    if res.retcode != 0:
        raise _error(res.stderr or res.stdout)
    out: dict[str, Any] = {}
    failed = []
    for line in res.stdout.splitlines():
        cols = line.split()
        if not cols:
            continue
        ident = " ".join(cols[1:])
        if "Get" in cols[0]:
            out[re.sub(r" \[.+B\]$", "", ident)] = True
        elif "Ign" in cols[0]:
            out[ident] = False
        elif "Hit" in cols[0]:
            out[ident] = None
        elif "Err" in cols[0]:
            out[ident] = False
            failed.append(ident)
    if _truthy(failhard) and failed:
        raise _error(f"Error getting repos: {', '.join(failed)}")
    return out


def _absent_latest(env: ModuleEnv, *names: str, **kwargs: Any) -> Any:
    """'' for one package, {name: ''} for several (no repository offers anything)."""
    if len(names) == 1:
        return ""
    return dict.fromkeys(names, "") if names else ""


@runs_command(absent=_absent_latest)
def latest_version(env: ModuleEnv, *names: str, **kwargs: Any) -> Any:
    """The version an install or upgrade would bring ('' when the newest is installed or none is
    offered); a dict for several names.  refresh=True (the default) updates the index first;
    show_installed=True answers the candidate even when it is installed; fromrepo= prefers a release."""
    if not names:
        return ""
    mgr = _manager()
    if _truthy(kwargs.get("refresh", True)):
        refresh_db(env, cache_valid_time=kwargs.get("cache_valid_time", 0))
    installed = _installed(env)
    out: dict[str, str] = {}
    for name in names:
        candidate = _candidate(mgr, name, kwargs.get("fromrepo")) or ""
        have = installed.get(name, [])
        if not have or _truthy(kwargs.get("show_installed", False)):
            out[name] = candidate
        elif candidate and not any(mgr.compare(v, ">=", candidate) for v in have):
            out[name] = candidate
        else:
            out[name] = ""
    return out[names[0]] if len(names) == 1 else out


def _candidate(mgr: Any, name: str, fromrepo: Any) -> str | None:
    if fromrepo and mgr.name == "apt":
        from runtime import cmdrun

        res = cmdrun.run(["apt-cache", "-q", "policy", name, "-o", f"APT::Default-Release={fromrepo}"], cwd="/",
                         env={"LC_ALL": "C"}, timeout=120)
        for line in res.stdout.splitlines():
            if line.strip().startswith("Candidate:"):
                value = line.split(":", 1)[1].strip()
                return None if value in ("(none)", "") else value
        return None
    found: str | None = mgr.candidate(name)
    return found


@runs_command(absent=_absent_latest, name="available_version")
def available_version(env: ModuleEnv, *names: str, **kwargs: Any) -> Any:
    """Same as pkg.latest_version."""
    return latest_version(env, *names, **kwargs)


@runs_command(absent=constant(False))
def upgrade_available(env: ModuleEnv, name: str, **kwargs: Any) -> bool:
    """True when the repositories offer a newer version than the installed one (or the package is
    not installed and is offered)."""
    return latest_version(env, name, **kwargs) != ""


@runs_command(absent=constant({}))
def list_upgrades(env: ModuleEnv, refresh: bool = True, dist_upgrade: bool = True, **kwargs: Any) -> dict[str, str]:
    """{package: new version} of every upgrade the repositories offer (apt: what a dist-upgrade, or
    an upgrade with dist_upgrade=False, would install)."""
    from runtime import cmdrun

    mgr = _manager()
    if _truthy(refresh):
        refresh_db(env, cache_valid_time=kwargs.get("cache_valid_time", 0))
    if mgr.name != "apt":
        res = cmdrun.run([mgr.tool, "-q", "check-update"], cwd="/", timeout=600)
        out: dict[str, str] = {}
        for line in res.stdout.splitlines():
            cols = line.split()
            if len(cols) == 3 and "." in cols[0]:
                out[cols[0].rsplit(".", 1)[0]] = cols[1]
        return out
    cmd = ["apt-get", "--just-print", "dist-upgrade" if _truthy(dist_upgrade) else "upgrade"]
    if kwargs.get("fromrepo"):
        cmd += ["-o", f"APT::Default-Release={kwargs['fromrepo']}"]
    res = cmdrun.run(cmd, cwd="/", env={"LC_ALL": "C"}, timeout=600)
    if res.retcode != 0:
        raise _error(f"Failed to get upgrades: {res.stderr or res.stdout}")
    return dict(re.findall(r"(?m)^Conf ([^ ]+) \(([^ ]+)", res.stdout))
