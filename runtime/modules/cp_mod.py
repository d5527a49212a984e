"""cp: the file server (the state tree, salt://): what it holds (list_states, list_master,
list_master_dirs, list_master_symlinks, envs, hash_file, get_file_str) and copying from it to this
host (get_file, get_dir, get_template, cache_file, cache_dir, is_cached).

On a minion of a master the files come from the master's file server (the minion's file client
caches them by hash under ``<cachedir>/files/<saltenv>/``); masterless, from file_roots.  Cached
copies (cache_file, cache_dir) live at that same place, as Salt's do.
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, Any

from runtime.modules.registry import constant, pure, reads_host, runs_command

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


@pure
def envs(env: ModuleEnv) -> list[str]:
    """The saltenvs of the file server."""
    source = env.state_source
    return sorted(source.saltenvs()) if source is not None else []


# -- copying from the file server ----------------------------------------------------------------


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _split_url(path: str, saltenv: str | None) -> tuple[str, str]:
    """(relative path, saltenv) of salt://path[?saltenv=env] (or a plain relative path)."""
    rel = path[len("salt://"):] if str(path).startswith("salt://") else str(path)
    rel, _, query = rel.partition("?")
    for part in query.split("&"):
        if part.startswith("saltenv="):
            saltenv = part.split("=", 1)[1]
    return rel.strip("/"), saltenv or "base"


def _fetch(env: ModuleEnv, path: str, saltenv: str | None) -> tuple[str, str, bytes, int | None] | None:
    """(rel, saltenv, data, mode) of a file of the file server, or None when it has none."""
    from compiler.errors import CompileError

    rel, saltenv = _split_url(path, saltenv)
    source = env.state_source
    if source is None or not rel:
        return None
    try:
        found = source.fetch(saltenv, rel)
    except CompileError as exc:
        raise _error(f"{path}: {exc.message}") from None
    return None if found is None else (rel, saltenv, found.data, found.mode)


def _write(dest: str, data: bytes, mode: int | None = None) -> None:
    """Write atomically, as a new file gets it (0666 less the umask; executable when the source is)."""
    from runtime.states import _files as F

    bits = 0o777 if mode is not None and mode & 0o111 else 0o666
    F.atomic_write(dest, data, bits & ~F.current_umask())


def _render_names(env: ModuleEnv, template: str | None, *names: str) -> list[str]:
    """Salt's cp.get_file/get_dir template: it renders the path names, not the contents."""
    if not template:
        return list(names)
    import jinja2

    context = {"grains": env.grains, "pillar": env.pillar, "opts": env.opts, "saltenv": env.opts.get("saltenv")}
    return [jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(n).render(context) for n in names]


def _destination(dest: str, rel: str, makedirs: Any) -> str | None:
    """Where to write: dest, or dest/<name> for a directory; None when its directory is missing."""
    dest = os.path.expanduser(str(dest))
    if dest.endswith("/") or os.path.isdir(dest):
        dest = os.path.join(dest, posixpath.basename(rel))
    parent = os.path.dirname(dest) or "."
    if not os.path.isdir(parent):
        if not _truthy(makedirs):
            return None
        os.makedirs(parent, exist_ok=True)
    return dest


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


@runs_command()
def get_file(env: ModuleEnv, path: str, dest: str, saltenv: str | None = None, makedirs: bool = False,
             template: str | None = None, gzip: Any = None, **kwargs: Any) -> Any:
    """Copy a file of the file server to dest (a file, or a directory to copy into); the path
    written, '' when the file server has no such file, False when dest's directory is missing (and
    makedirs is not set).  template=jinja renders the two path names (not the content: use
    cp.get_template for that), as Salt does."""
    path, dest = _render_names(env, template, str(path), str(dest))
    found = _fetch(env, path, saltenv)
    if found is None:
        return ""
    rel, _saltenv, data, mode = found
    target = _destination(dest, rel, makedirs)
    if target is None:
        return False
    _write(target, data, mode)
    return target


@runs_command()
def get_template(env: ModuleEnv, path: str, dest: str, template: str = "jinja", saltenv: str | None = None,
                 makedirs: bool = False, **kwargs: Any) -> Any:
    """Render a file of the file server as a template (grains, pillar, salt, opts and the keyword
    arguments in its context) and write it to dest; the path written, '' when there is no such file."""
    from runtime.state_run import StateRunner

    found = _fetch(env, str(path), saltenv)
    if found is None:
        return ""
    rel, env_name, data, mode = found
    target = _destination(str(dest), rel, makedirs)
    if target is None:
        return False
    text = StateRunner(env, env.pillar).render_template(data.decode("utf-8", errors="replace"), str(template),
                                                        dict(kwargs), f"salt://{rel}?saltenv={env_name}")
    _write(target, text.encode("utf-8"), mode)
    return target


def _files_under(env: ModuleEnv, path: str, saltenv: str | None) -> tuple[str, str, list[str]]:
    rel, saltenv = _split_url(path, saltenv)
    prefix = rel.rstrip("/") + "/" if rel else ""
    return rel, saltenv, [f for f in _files(env, saltenv) if f.startswith(prefix)]


@runs_command()
def get_dir(env: ModuleEnv, path: str, dest: str, saltenv: str | None = None, template: str | None = None,
            gzip: Any = None, **kwargs: Any) -> list[str]:
    """Copy a directory of the file server (recursively) into dest: dest/<its name>/...; the paths
    written, sorted ([] when the file server has no such directory)."""
    path, dest = _render_names(env, template, str(path), str(dest))
    rel, env_name, files = _files_under(env, path, saltenv)
    base = posixpath.dirname(rel.rstrip("/"))
    out = []
    for name in files:
        found = _fetch(env, name, env_name)
        if found is None:
            continue
        target = os.path.join(os.path.expanduser(dest), posixpath.relpath(name, base) if base else name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _write(target, found[2], found[3])
        out.append(target)
    return sorted(out)


def _cache_path(env: ModuleEnv, saltenv: str, rel: str) -> str:
    return os.path.join(str(env.opts.get("cachedir") or "."), "files", saltenv, *rel.split("/"))


@runs_command()
def cache_file(env: ModuleEnv, path: str, saltenv: str | None = None, source_hash: Any = None,
               verify_ssl: bool = True, use_etag: bool = False) -> Any:
    """Copy a file of the file server into this minion's cache; its local path, False when the file
    server has no such file."""
    found = _fetch(env, str(path), saltenv)
    if found is None:
        return False
    rel, env_name, data, mode = found
    target = _cache_path(env, env_name, rel)
    from runtime.private_files import ensure_private_dir

    ensure_private_dir(os.path.dirname(target))
    _write(target, data, mode)
    return target


@runs_command()
def cache_dir(env: ModuleEnv, path: str, saltenv: str | None = None, include_empty: bool = False,
              include_pat: str | None = None, exclude_pat: str | None = None) -> list[str]:
    """Copy a directory of the file server into this minion's cache; the local paths, sorted."""
    import re

    _rel, env_name, files = _files_under(env, str(path), saltenv)
    out = []
    for name in files:
        if include_pat and not re.search(include_pat, name):
            continue
        if exclude_pat and re.search(exclude_pat, name):
            continue
        cached = cache_file(env, name, env_name)
        if cached:
            out.append(cached)
    return sorted(out)


@reads_host(absent=constant(""))
def is_cached(env: ModuleEnv, path: str, saltenv: str | None = None) -> str:
    """The local path of a cached file of the file server, '' when it is not cached."""
    rel, env_name = _split_url(str(path), saltenv)
    target = _cache_path(env, env_name, rel)
    return target if rel and os.path.isfile(target) else ""


@pure
def hash_file(env: ModuleEnv, path: str, saltenv: str | None = None) -> Any:
    """{hash_type: sha256, hsum} of a file of the file server, '' when it has no such file."""
    import hashlib

    found = _fetch(env, str(path), saltenv)
    if found is None:
        return ""
    return {"hash_type": "sha256", "hsum": hashlib.sha256(found[2]).hexdigest()}
