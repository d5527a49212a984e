"""cp: what the file server (the state tree) holds: list_states, list_master, list_master_dirs,
list_master_symlinks, get_file_str."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _saltenv(env: ModuleEnv, saltenv: str | None) -> str:
    return saltenv or env.opts.get("saltenv") or "base"


def _files(env: ModuleEnv, saltenv: str) -> list[str]:
    source = env.state_source
    if source is None or saltenv not in source.saltenvs():
        return []
    return sorted(source.list_files(saltenv))


def _dirs(files: list[str]) -> list[str]:
    out: set[str] = set()
    for path in files:
        parent = posixpath.dirname(path)
        while parent and parent not in out:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return sorted(out)


@pure
def list_states(env: ModuleEnv, saltenv: str | None = None) -> list[str]:
    """The sls names of the state tree, sorted."""
    states = set()
    for path in _files(env, _saltenv(env, saltenv)):
        if path.endswith("/init.sls"):
            states.add(path.replace("/", ".")[:-9])
        elif path.endswith(".sls"):
            states.add(path.replace("/", ".")[:-4])
    return sorted(states)


@pure
def list_master(env: ModuleEnv, saltenv: str | None = None, prefix: str = "") -> list[str]:
    """The files of the state tree (starting with prefix), sorted."""
    prefix = prefix.strip("/")
    return [f for f in _files(env, _saltenv(env, saltenv)) if f.startswith(prefix)]


@pure
def list_master_dirs(env: ModuleEnv, saltenv: str | None = None, prefix: str = "") -> list[str]:
    """The directories of the state tree that hold files (starting with prefix), sorted."""
    prefix = prefix.strip("/")
    return [d for d in _dirs(_files(env, _saltenv(env, saltenv))) if d.startswith(prefix)]


@pure
def list_master_symlinks(env: ModuleEnv, saltenv: str | None = None, prefix: str = "") -> dict[str, str]:
    """Symlinks of the state tree: saltpan's file server serves their targets, so {}."""
    return {}


@pure
def get_file_str(env: ModuleEnv, path: str, saltenv: str | None = None) -> Any:
    """The text of a salt:// file of the state tree (False when it does not exist)."""
    source = env.state_source
    rel = path[len("salt://"):] if path.startswith("salt://") else path
    if "?saltenv=" in rel:
        rel, saltenv = rel.split("?saltenv=", 1)
    if source is None:
        return False
    found = source.get(_saltenv(env, saltenv), rel.lstrip("/"))
    return False if found is None else found.text
