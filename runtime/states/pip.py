"""The ``pip`` state module (Salt's ``pip_state``): Python packages (installed, removed).

pip is ``bin_env`` (a pip executable, or a virtualenv directory: its ``bin/pip``); without it,
as Salt does with its own interpreter, the Python running saltpan (``python -m pip``). Installed
versions come from ``pip list --format=json``; a requirement (``name``, ``pkgs``) is satisfied
when the installed version matches its specifier (PEP 440, through ``packaging``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["installed", "removed"]


class PipError(Exception):
    pass


def pip_command(bin_env: str | None) -> list[str]:
    if not bin_env:
        return [sys.executable, "-m", "pip"]
    if os.path.isdir(bin_env):
        for candidate in ("bin/pip", "bin/pip3"):
            path = os.path.join(bin_env, candidate)
            if os.access(path, os.X_OK):
                return [path]
        raise PipError(f"Could not find a pip binary in virtualenv {bin_env}")
    if os.access(bin_env, os.X_OK):
        return [bin_env]
    raise PipError(f"Could not find a pip binary at {bin_env}")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _split(requirement: str) -> tuple[str, str]:
    found = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", requirement)
    if not found:
        raise PipError(f"Invalid requirement: {requirement}")
    return found.group(1), found.group(3).strip()


def satisfied(requirement: str, installed_versions: dict[str, str]) -> bool:
    name, spec = _split(requirement)
    have = installed_versions.get(canonical(name))
    if have is None:
        return False
    if not spec:
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # lazily: a pip dependency, not ours

    try:
        return SpecifierSet(spec.split(";")[0].strip()).contains(have, prereleases=True)
    except InvalidSpecifier as exc:
        raise PipError(f"Invalid requirement: {requirement}: {exc}") from None


def _run(cmd: list[str], user: str | None, env: dict[str, str] | None, cwd: str | None) -> cmdrun.CommandResult:
    return cmdrun.run(cmd, runas=user, env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})}, cwd=cwd or "/",
                      timeout=1800)


def installed_versions(pip: list[str], user: str | None = None, env: dict[str, str] | None = None) -> dict[str, str]:
    res = _run([*pip, "list", "--format=json"], user, env, None)
    if res.retcode != 0:
        raise PipError(f"pip list failed: {(res.stderr or res.stdout).strip()}")
    return {canonical(item["name"]): item["version"] for item in json.loads(res.stdout or "[]")}


def install_args(kwargs: dict[str, Any]) -> list[str]:
    """pip install options from Salt's arguments."""
    args: list[str] = []
    if kwargs.get("upgrade"):
        args.append("--upgrade")
    if kwargs.get("no_index"):
        args.append("--no-index")
    if kwargs.get("index_url"):
        args += ["--index-url", str(kwargs["index_url"])]
    for url in _as_list(kwargs.get("extra_index_url")):
        args += ["--extra-index-url", url]
    for link in _as_list(kwargs.get("find_links")):
        args += ["--find-links", link]
    if kwargs.get("pre_releases"):
        args.append("--pre")
    if kwargs.get("no_deps"):
        args.append("--no-deps")
    if kwargs.get("user_install"):
        args.append("--user")
    for req in _as_list(kwargs.get("requirements")):
        args += ["--requirement", req]
    return args


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _requirements(name: str, pkgs: Any) -> list[str]:
    if pkgs:
        return [str(p) if not isinstance(p, dict) else " ".join(f"{k}{v}" for k, v in p.items()) for p in pkgs]
    return [name]


def installed(ctx: StateContext, name: str, pkgs: Any = None, bin_env: str | None = None, user: str | None = None,
              env_vars: Any = None, cwd: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """The requirement ``name`` (or each of ``pkgs``) is installed."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    wanted = _requirements(name, pkgs)
    env = {str(k): str(v) for k, v in (env_vars or {}).items()}
    try:
        pip = pip_command(bin_env)
        have = installed_versions(pip, user, env)
        missing = [r for r in wanted if kwargs.get("upgrade") or not satisfied(r, have)]
    except (PipError, cmdrun.CommandError) as exc:
        return dict(ret, result=False, comment=str(exc))
    if not missing and not kwargs.get("requirements"):
        comments = [f"Python package {r} was already installed" for r in wanted]
        return dict(ret, comment="\n".join([*comments, "All specified packages are already installed"]))
    if ctx.test:
        return dict(ret, result=None, comment="\n".join(f"Python package {r} is set to be installed" for r in missing)
                    or f"Requirements file {', '.join(_as_list(kwargs.get('requirements')))} would be installed")
    try:
        res = _run([*pip, "install", *install_args(kwargs), *missing], user, env, cwd)
    except cmdrun.CommandError as exc:
        return dict(ret, result=False, comment=str(exc))
    if res.retcode != 0:
        return dict(ret, result=False, comment=f"Failed to install packages: {', '.join(missing)}. Error: "
                                               f"{(res.stderr or res.stdout).strip()}")
    after = installed_versions(pip, user, env)
    for requirement in missing:
        req_name = _split(requirement)[0]
        version = after.get(canonical(req_name))
        if version is not None and have.get(canonical(req_name)) != version:
            ret["changes"][f"{req_name}=={version}"] = "Installed"
    ret["comment"] = "All packages were successfully installed" if ret["changes"] else \
        "There was no error installing packages"
    return ret


def removed(ctx: StateContext, name: str, bin_env: str | None = None, user: str | None = None,
            **kwargs: Any) -> dict[str, Any]:
    """The Python package ``name`` is not installed."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        pip = pip_command(bin_env)
        have = installed_versions(pip, user)
    except (PipError, cmdrun.CommandError) as exc:
        return dict(ret, result=False, comment=str(exc))
    if canonical(name) not in have:
        return dict(ret, comment="Package is not installed.")
    if ctx.test:
        return dict(ret, result=None, comment=f"Package {name} is set to be removed")
    res = _run([*pip, "uninstall", "-y", name], user, None, None)
    if res.retcode != 0 or canonical(name) in installed_versions(pip, user):
        return dict(ret, result=False, comment=f"Could not remove package: {(res.stderr or res.stdout).strip()}")
    return dict(ret, changes={name: "Removed"}, comment="Package was successfully removed.")
