"""The ``pkg`` state module: installed / latest / removed / purged through apt+dpkg or dnf+rpm.

Targets are ``name`` or a ``pkgs`` list whose items are names or ``{name: version}``.
A version is an exact version, a glob (``1.2.*``) or a comparison (``>=1.2``, ``<2``).
``installed`` also takes Salt's ``sources`` (package files, see ``_pkg_sources``): the name
and version are read from each file, and a package already installed at that version is
left alone.
Changes are Salt's ``{package: {old: <version or ''>, new: <version or ''>}}`` (an apt purge
reports ``{removed: {...}, installed: {...}}``, as Salt's does); in test mode the predicted
new version is the repository candidate (``installed`` when unknown) or the file's version,
and removals predict ``new: removed``.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _pkg_sources

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["installed", "latest", "mod_watch", "purged", "removed"]

_VERSION_OP = re.compile(r"^\s*(<=|>=|==|!=|<|>|=)?\s*(\S+)\s*$")


class PkgError(Exception):
    """A package-manager command failed; the message carries its output."""


def _run(argv: list[str], timeout: int = 1800) -> cmdrun.CommandResult:
    env = {"DEBIAN_FRONTEND": "noninteractive", "APT_LISTCHANGES_FRONTEND": "none", "LC_ALL": "C"}
    return cmdrun.run(argv, cwd="/", env=env, timeout=timeout)


def _checked(argv: list[str]) -> str:
    res = _run(argv)
    if res.retcode != 0:
        raise PkgError(f"{' '.join(argv)} failed (exit {res.retcode}): {res.stderr or res.stdout}")
    return res.stdout


_APT_INSTALL = ["apt-get", "-q", "-y", "--allow-downgrades", "-o", "DPkg::Options::=--force-confold", "-o",
                "DPkg::Options::=--force-confdef"]


class Apt:
    name = "apt"
    file_suffix = ".deb"

    def _status(self, names: list[str]) -> list[tuple[str, str, str]]:
        """(package, db:Status-Abbrev, version) rows dpkg knows for ``names``."""
        res = _run(["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Abbrev}\t${Version}\n", *names])
        return [(parts[0], parts[1], parts[2]) for line in res.stdout.splitlines()
                if len(parts := line.split("\t")) == 3]

    def installed(self, names: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = dict.fromkeys(names)
        for package, abbrev, version in self._status(names):
            # second letter: the package state ("i" installed, whatever the selection: ii, hi, ri)
            if package in out and abbrev[1:2] == "i":
                out[package] = version
        return out

    def leftovers(self, names: list[str]) -> dict[str, str | None]:
        """Versions of packages removed but not purged (config files left, or half removed)."""
        out: dict[str, str | None] = dict.fromkeys(names)
        for package, abbrev, version in self._status(names):
            if package in out and abbrev[1:2] not in ("i", "n", "") and version:
                out[package] = version
        return out

    def file_info(self, path: str) -> tuple[str, str]:
        """(Package, Version) from a .deb file."""
        res = _run(["dpkg-deb", "-f", path, "Package", "Version"])
        if res.retcode != 0:
            raise PkgError(f"Unable to read package metadata from {path}: {res.stderr or res.stdout}")
        fields = dict(line.split(":", 1) for line in res.stdout.splitlines() if ":" in line)
        name, version = fields.get("Package", "").strip(), fields.get("Version", "").strip()
        if not name or not version:
            raise PkgError(f"Unable to read package metadata from {path}: no Package or Version field")
        return name, version

    def install_files(self, paths: list[str]) -> None:
        _checked([*_APT_INSTALL, "install", *paths])

    def candidate(self, name: str) -> str | None:
        res = _run(["apt-cache", "policy", name])
        for line in res.stdout.splitlines():
            line = line.strip()
            if line.startswith("Candidate:"):
                value = line.split(":", 1)[1].strip()
                return None if value in ("(none)", "") else value
        return None

    def available(self, name: str) -> list[str]:
        res = _run(["apt-cache", "madison", name])
        return [parts[1].strip() for line in res.stdout.splitlines()
                if len(parts := line.split("|")) >= 3 and parts[0].strip() == name]

    def refresh(self) -> None:
        _checked(["apt-get", "-q", "update"])

    def install(self, specs: dict[str, str | None], fromrepo: str | None = None) -> None:
        args = [f"{n}={v}" if v else n for n, v in specs.items()]
        repo = ["-t", fromrepo] if fromrepo else []
        _checked([*_APT_INSTALL, *repo, "install", *args])

    def remove(self, names: list[str], purge: bool) -> None:
        _checked(["apt-get", "-q", "-y", "purge" if purge else "remove", *names])

    def compare(self, left: str, op: str, right: str) -> bool:
        ops = {"<": "lt", "<=": "le", "==": "eq", "=": "eq", "!=": "ne", ">=": "ge", ">": "gt"}
        return _run(["dpkg", "--compare-versions", left, ops[op], right]).retcode == 0


def _rpmvercmp(a: str, b: str) -> int:
    """rpm's version comparison (segments of digits or letters, ``~`` sorts first)."""
    if a == b:
        return 0
    seg = re.compile(r"(~|\^|\d+|[a-zA-Z]+)")
    sa, sb = seg.findall(a), seg.findall(b)
    while sa or sb:
        x = sa.pop(0) if sa else None
        y = sb.pop(0) if sb else None
        if x == "~" or y == "~":
            if x != y:
                return -1 if x == "~" else 1
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        if x.isdigit() and y.isdigit():
            diff = int(x) - int(y)
            if diff:
                return 1 if diff > 0 else -1
        elif x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        elif x != y:
            return 1 if x > y else -1
    return 0


def _evr(text: str) -> tuple[int, str, str]:
    epoch, _, rest = text.rpartition(":") if ":" in text else ("0", "", text)
    version, _, release = rest.partition("-")
    return int(epoch or 0) if str(epoch).isdigit() else 0, version, release


class Dnf:
    name = "dnf"
    file_suffix = ".rpm"

    def __init__(self) -> None:
        self.tool = shutil.which("dnf") or shutil.which("yum") or "dnf"

    def leftovers(self, names: list[str]) -> dict[str, str | None]:
        return dict.fromkeys(names)  # rpm keeps no "removed but configured" state

    def file_info(self, path: str) -> tuple[str, str]:
        """(NAME, [EPOCH:]VERSION-RELEASE) from an .rpm file."""
        res = _run(["rpm", "-qp", "--qf", "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\n", path])
        parts = res.stdout.strip().split("\t")
        if res.retcode != 0 or len(parts) != 2 or not parts[0]:
            raise PkgError(f"Unable to read package metadata from {path}: {res.stderr or res.stdout}")
        return parts[0], parts[1].replace("(none):", "")

    def install_files(self, paths: list[str]) -> None:
        _checked([self.tool, "-y", "install", *paths])

    def installed(self, names: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = dict.fromkeys(names)
        res = _run(["rpm", "-q", "--qf", "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\n", *names])
        for line in res.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 2 and parts[0] in out:
                out[parts[0]] = parts[1].replace("(none):", "")
        return out

    def candidate(self, name: str) -> str | None:
        res = _run([self.tool, "-q", "repoquery", "--latest-limit", "1", "--qf", "%{epoch}:%{version}-%{release}",
                    name])
        value = res.stdout.strip().splitlines()[-1] if res.retcode == 0 and res.stdout.strip() else ""
        return value[2:] if value.startswith("0:") else (value or None)

    def available(self, name: str) -> list[str]:
        res = _run([self.tool, "-q", "repoquery", "--qf", "%{epoch}:%{version}-%{release}", name])
        out = []
        for line in res.stdout.splitlines():
            line = line.strip()
            if line:
                out.append(line[2:] if line.startswith("0:") else line)
        return out

    def refresh(self) -> None:
        res = _run([self.tool, "-q", "makecache"])
        if res.retcode not in (0,):
            raise PkgError(f"{self.tool} makecache failed: {res.stderr}")

    def install(self, specs: dict[str, str | None], fromrepo: str | None = None) -> None:
        repo = [f"--repo={fromrepo}"] if fromrepo else []
        _checked([self.tool, "-y", *repo, "install", *(f"{n}-{v}" if v else n for n, v in specs.items())])

    def remove(self, names: list[str], purge: bool) -> None:
        _checked([self.tool, "-y", "remove", *names])

    def compare(self, left: str, op: str, right: str) -> bool:
        el, er = _evr(left), _evr(right)
        cmp = (el[0] > er[0]) - (el[0] < er[0]) or _rpmvercmp(el[1], er[1])
        if not cmp and el[2] and er[2]:
            cmp = _rpmvercmp(el[2], er[2])
        return {"<": cmp < 0, "<=": cmp <= 0, "==": cmp == 0, "=": cmp == 0, "!=": cmp != 0,
                ">=": cmp >= 0, ">": cmp > 0}[op]


def backend() -> Apt | Dnf | None:
    if shutil.which("dpkg-query") and shutil.which("apt-get"):
        return Apt()
    if shutil.which("rpm") and (shutil.which("dnf") or shutil.which("yum")):
        return Dnf()
    return None


def _same_version(mgr: Apt | Dnf, installed: str | None, wanted: str) -> bool:
    """``installed`` is ``wanted`` (as written, or equal by the package manager's comparison)."""
    return installed is not None and (installed == wanted or mgr.compare(installed, "=", wanted))


@dataclass
class Target:
    name: str
    version: str | None  # the requested version spec, as written

    def satisfied_by(self, mgr: Apt | Dnf, installed: str | None) -> bool:
        if installed is None:
            return False
        if not self.version:
            return True
        found = _VERSION_OP.match(self.version)
        if not found:
            return installed == self.version
        op, wanted = found.group(1) or "=", found.group(2)
        if op in ("=", "==") and any(c in wanted for c in "*?["):
            return fnmatch.fnmatch(installed, wanted)
        if op in ("=", "=="):
            return _same_version(mgr, installed, wanted)
        return mgr.compare(installed, op, wanted)

    def described(self) -> str:
        """``name``, ``name=1.2`` or ``name>=1.2``, as Salt names a target in comments."""
        if not self.version:
            return self.name
        return f"{self.name}{'' if self.version.startswith(('<', '>', '=')) else '='}{self.version}"

    def exact(self) -> str | None:
        """The exact version asked for (None for no version, a glob or a comparison)."""
        if not self.version:
            return None
        found = _VERSION_OP.match(self.version)
        if found and (found.group(1) in (None, "=", "==")) and not any(c in found.group(2) for c in "*?["):
            return found.group(2)
        return None

    def resolve(self, mgr: Apt | Dnf) -> str | None:
        """The version to install: the exact one, else the newest available one that matches.

        Raises PkgError when a version is asked for and no available version matches it.
        """
        if not self.version:
            return None
        exact = self.exact()
        if exact is not None:
            return exact
        matching = [v for v in mgr.available(self.name) if self.satisfied_by(mgr, v)]
        if not matching:
            raise PkgError(f"No version of {self.name} matching '{self.version}' is available")
        best = matching[0]
        for candidate in matching[1:]:
            if mgr.compare(candidate, ">", best):
                best = candidate
        return best


def _targets(name: str, pkgs: Any, version: Any) -> list[Target]:
    if pkgs:
        out: list[Target] = []
        for item in pkgs if isinstance(pkgs, list) else [pkgs]:
            if isinstance(item, Mapping):
                out.extend(Target(str(k), None if v is None else str(v)) for k, v in item.items())
            else:
                out.append(Target(str(item), None))
        return out
    return [Target(str(name), None if version in (None, "") else str(version))]


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def _no_backend(ret: dict[str, Any]) -> dict[str, Any]:
    ret.update(result=False, comment="No supported package manager found (apt/dpkg or dnf/rpm)")
    return ret


def _diff(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> dict[str, Any]:
    return {name: {"old": before.get(name) or "", "new": after.get(name) or ""}
            for name in after if (before.get(name) or "") != (after.get(name) or "")}


def _refresh_if(mgr: Apt | Dnf, refresh: Any) -> None:
    if refresh is True or str(refresh).lower() in ("true", "yes", "1"):
        mgr.refresh()


def _installed_comment(names: list[str]) -> str:
    """Salt's wording: the names when they are short, else a count."""
    summary = ", ".join(names)
    if len(summary) < 20:
        return f"The following packages were installed/updated: {summary}"
    return f"{len(names)} targeted package{'s were' if len(names) > 1 else ' was'} installed/updated."


def installed(ctx: StateContext, name: str, version: Any = None, pkgs: Any = None, sources: Any = None,
              refresh: Any = None, fromrepo: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Make sure packages are installed (at ``version`` when given, or from the package files in ``sources``)."""
    ret = _ret(name)
    if pkgs and sources:
        ret.update(result=False, comment='Only one of "pkgs" and "sources" is permitted.')
        return ret
    mgr = backend()
    if mgr is None:
        return _no_backend(ret)
    if sources:
        return _installed_from_files(ctx, ret, mgr, sources, refresh)
    targets = _targets(name, pkgs, version)
    before = mgr.installed([t.name for t in targets])
    todo = [t for t in targets if not t.satisfied_by(mgr, before[t.name])]
    if not todo:
        names = ", ".join(t.name for t in targets)
        ret["comment"] = (f"Package {names} is already installed" if len(targets) == 1
                          else "All specified packages are already installed")
        return ret
    try:
        if not ctx.test:
            _refresh_if(mgr, refresh)
            if refresh is None and any(mgr.candidate(t.name) is None for t in todo):
                mgr.refresh()
        wanted = {t.name: t.resolve(mgr) for t in todo}
    except (PkgError, cmdrun.CommandError) as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    if ctx.test:
        ret["result"] = None
        ret["changes"] = {t.name: {"old": before[t.name] or "",
                                   "new": wanted[t.name] or mgr.candidate(t.name) or "installed"}
                          for t in todo}
        ret["comment"] = "The following packages would be installed/updated: " + ", ".join(t.name for t in todo)
        return ret
    try:
        mgr.install(wanted, fromrepo)
        error = ""
    except (PkgError, cmdrun.CommandError) as exc:
        error = str(exc)
    after = mgr.installed([t.name for t in targets])
    ret["changes"] = _diff(before, after)
    failed = [t.name for t in todo if not t.satisfied_by(mgr, after[t.name])]
    if failed:
        ret["result"] = False
        ret["comment"] = "The following packages failed to install/update: " + ", ".join(failed)
        if error:
            ret["comment"] += f"\n{error}"
    else:
        ret["comment"] = _installed_comment([t.described() for t in todo])
    return ret


def _installed_from_files(ctx: StateContext, ret: dict[str, Any], mgr: Apt | Dnf, sources: Any,
                          refresh: Any) -> dict[str, Any]:
    """``pkg.installed`` with ``sources``: install each file whose version is not the installed one."""
    with _pkg_sources.Staging() as staging:
        try:
            entries = _pkg_sources.parse(sources)
            files: dict[str, tuple[str, str]] = {}  # package -> (local path, version in the file)
            for entry in entries:
                path = staging.local_path(ctx, entry, mgr.file_suffix)
                found, file_version = mgr.file_info(path)
                if found != entry.name:
                    raise _pkg_sources.SourcesError(
                        f"Source {entry.source} is package '{found}' (version {file_version}), not "
                        f"'{entry.name}': the key of each 'sources' item must be the package in its file")
                files[entry.name] = (path, file_version)
        except (_pkg_sources.SourcesError, PkgError, cmdrun.CommandError, OSError) as exc:
            ret.update(result=False, comment=str(exc))
            return ret
        before = mgr.installed(list(files))
        todo = [n for n, (_path, file_version) in files.items()
                if not _same_version(mgr, before[n], file_version)]
        if not todo:
            ret["comment"] = "All specified packages are already installed"
            return ret
        if ctx.test:
            ret["result"] = None
            ret["changes"] = {n: {"old": before[n] or "", "new": files[n][1]} for n in todo}
            ret["comment"] = "The following packages would be installed/updated: " + ", ".join(todo)
            return ret
        error = ""
        try:
            _refresh_if(mgr, refresh)
            mgr.install_files([files[n][0] for n in todo])
        except (PkgError, cmdrun.CommandError) as exc:
            error = str(exc)
    after = mgr.installed(list(files))
    ret["changes"] = _diff(before, after)
    failed = [n for n in todo if not _same_version(mgr, after[n], files[n][1])]
    comment = []
    if failed:
        ret["result"] = False
        comment.append("The following packages failed to install/update: " + ", ".join(failed))
    done = [n for n in todo if n not in failed]
    if done:
        comment.append(_installed_comment(done))
    kept = [n for n in files if n not in todo]
    if kept:
        comment.append("The following packages were already installed: " + ", ".join(kept))
    if failed and error:
        comment.append(error)
    ret["comment"] = "\n".join(comment)
    return ret


def latest(ctx: StateContext, name: str, pkgs: Any = None, refresh: Any = None, fromrepo: Any = None,
           **kwargs: Any) -> dict[str, Any]:
    """Make sure packages are installed at the newest version the repositories offer."""
    ret = _ret(name)
    mgr = backend()
    if mgr is None:
        return _no_backend(ret)
    targets = _targets(name, pkgs, None)
    try:
        if not ctx.test:
            _refresh_if(mgr, refresh)
    except (PkgError, cmdrun.CommandError) as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    before = mgr.installed([t.name for t in targets])
    candidates = {t.name: mgr.candidate(t.name) for t in targets}
    unknown = [n for n, c in candidates.items() if c is None and before[n] is None]
    if unknown:
        ret.update(result=False, comment="No information found for " + ", ".join(f"'{n}'" for n in unknown))
        return ret
    todo = [n for n, c in candidates.items() if c is not None and before[n] != c]
    if not todo:
        ret["comment"] = ("Package " + ", ".join(candidates) + " is already up-to-date" if len(targets) == 1
                          else "All packages are up-to-date (" + ", ".join(candidates) + ").")
        return ret
    if ctx.test:
        ret["result"] = None
        ret["changes"] = {n: {"old": before[n] or "", "new": candidates[n]} for n in todo}
        ret["comment"] = "The following packages would be installed/upgraded: " + ", ".join(todo)
        return ret
    error = ""
    try:
        mgr.install({n: None for n in todo}, fromrepo)
    except (PkgError, cmdrun.CommandError) as exc:
        error = str(exc)
    after = mgr.installed([t.name for t in targets])
    ret["changes"] = _diff(before, after)
    failed = [n for n in todo if after[n] != candidates[n]]
    if failed:
        ret["result"] = False
        ret["comment"] = "The following packages failed to update: " + ", ".join(failed) + (
            f"\n{error}" if error else "")
    else:
        ret["comment"] = "The following packages were successfully installed/upgraded: " + ", ".join(todo)
    return ret


def _uninstall(ctx: StateContext, name: str, version: Any, pkgs: Any, purge: bool) -> dict[str, Any]:
    ret = _ret(name)
    action = "purge" if purge else "remove"
    mgr = backend()
    if mgr is None:
        return _no_backend(ret)
    targets = _targets(name, pkgs, version)
    names = [t.name for t in targets]
    before = mgr.installed(names)
    # a purge also takes packages removed earlier whose configuration files stayed (dpkg's "rc")
    left_before = mgr.leftovers(names) if purge else dict.fromkeys(names)
    todo = sorted({t.name for t in targets if before[t.name] is not None and (
        not t.version or t.satisfied_by(mgr, before[t.name]))} | {n for n in names if left_before[n] is not None})
    if not todo:
        ret["comment"] = "None of the targeted packages are installed" + (
            " or partially installed" if purge else "")
        return ret
    if ctx.test:
        ret["result"] = None
        ret["changes"] = {n: {"new": f"{action}d", "old": ""} for n in todo}
        ret["comment"] = f"The following packages will be {action}d: {', '.join(todo)}."
        return ret
    error = ""
    try:
        mgr.remove(todo, purge)
    except (PkgError, cmdrun.CommandError) as exc:
        error = str(exc)
    after = mgr.installed(names)
    left_after = mgr.leftovers(names) if purge else dict.fromkeys(names)
    if purge and mgr.name == "apt":  # Salt's apt purge reports both package lists
        ret["changes"] = {"removed": _diff(left_before, left_after), "installed": _diff(before, after)}
    else:
        ret["changes"] = _diff(before, after)
    failed = [n for n in todo if after[n] is not None or left_after[n] is not None]
    if failed:
        ret["result"] = False
        ret["comment"] = f"The following packages failed to {action}: {', '.join(failed)}." + (
            f"\n{error}" if error else "")
    elif skipped := sorted({n for n in names if n not in todo}):
        ret["comment"] = (f"The following packages were not installed: {', '.join(skipped)} "
                          f"The following packages were {action}d: {', '.join(todo)}.")
    else:
        ret["comment"] = f"All targeted packages were {action}d."
    return ret


def removed(ctx: StateContext, name: str, version: Any = None, pkgs: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Make sure packages are not installed (configuration files stay)."""
    return _uninstall(ctx, name, version, pkgs, purge=False)


def purged(ctx: StateContext, name: str, version: Any = None, pkgs: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Make sure packages and their configuration files are removed."""
    return _uninstall(ctx, name, version, pkgs, purge=True)



def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: run the watching pkg function again (as Salt does)."""
    funs: dict[str, Callable[..., dict[str, Any]]] = {"installed": installed, "latest": latest, "removed": removed,
                                                      "purged": purged}
    if sfun in funs:
        return funs[sfun](ctx, name, **kwargs)
    return {"name": name, "changes": {}, "result": False,
            "comment": f"pkg.{sfun} does not work with the watch requisite"}
