"""A configuration whose git remotes serve one revision: the two sides of ``compile --all --diff REV``.

``pinned(opts, rev, saltenv)`` looks ``rev`` up in the cached clone of every gitfs and git_pillar
remote (a branch, a tag or a commit id, optionally followed by ``~N`` / ``^N`` as git writes
them).  Each remote that has it is rewritten, in the returned opts, to serve that commit:

* a gitfs remote serves it as ``saltenv`` (``base`` by default): ``base: <commit>`` (the branch
  that was ``base`` is then not a saltenv of its own), or a ``saltenv`` mapping ``{dev: [{ref:
  <commit>}]}``; an ``all_saltenvs`` remote serves it for every saltenv;
* a git_pillar ``__env__`` remote serves it whatever the environment (``all_saltenvs``), a remote
  with a fixed branch serves it in that branch's place, with the same pillar environment.

The clone directories stay the same (the remote's id, or ``name``), so nothing is fetched or
copied: the commits are read from the clones the master (or ``--fetch``) keeps.  Remotes that do
not have ``rev`` are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.config import option
from runtime.gitfs.remotes import GIT_PILLAR, GITFS, Remote, git_pillar_remotes, gitfs_remotes, is_hex
from runtime.gitfs.repo import CachedRepo, GitCacheError, cache_root

_SUFFIX = re.compile(r"^(?P<name>.+?)(?P<suffix>(?:[~^][0-9]*)*)$")


@dataclass(frozen=True)
class Pin:
    remote: Remote
    commit: str  # full commit id


@dataclass
class Pinned:
    opts: dict[str, Any]
    pins: list[Pin]


def resolve(cached: CachedRepo, rev: str) -> str | None:
    """The commit id rev names in the clone (``dev``, ``v1.0``, ``3f2a9c1``, ``dev~2``); None when it has
    no such revision or was never fetched."""
    found = _SUFFIX.match(rev.strip())
    if not found:
        return None
    name, suffix = found.group("name"), found.group("suffix")
    try:
        commit = cached.commit(name, ("branch", "tag", "sha"))
        if commit is None:
            return None
        if not suffix:
            return str(commit.id)
        import pygit2

        repo = cached.require()
        try:
            return str(repo.revparse_single(f"{commit.id}{suffix}").peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None
    except GitCacheError:
        return None


def _params(entry: Any) -> tuple[str, list[dict[str, Any]]]:
    """(id, per-remote params as one-key mappings) of a remotes-list entry (already checked by the parser)."""
    if isinstance(entry, str):
        return entry, []
    entry_id, params = next(iter(entry.items()))
    if isinstance(params, dict):
        return str(entry_id), [{k: v} for k, v in params.items()]
    return str(entry_id), [dict(p) for p in params or []]


def _saltenv_param(remote: Remote, saltenv: str, commit: str) -> list[dict[str, Any]]:
    """The remote's own ``saltenv`` mapping with saltenv served by commit."""
    out: list[dict[str, Any]] = []
    confs = dict(remote.saltenv)
    for env, conf in confs.items():
        if env == saltenv:
            continue
        values = [{k: v} for k, v in (("ref", conf.ref), ("mountpoint", conf.mountpoint), ("root", conf.root))
                  if v is not None]
        out.append({env: values})
    own = confs.get(saltenv)
    values = [{"ref": commit}] + [{k: v} for k, v in (("mountpoint", own.mountpoint if own else None),
                                                        ("root", own.root if own else None)) if v is not None]
    out.append({saltenv: values})
    return out


def _pin_gitfs(entry: Any, remote: Remote, commit: str, saltenv: str) -> dict[str, Any]:
    entry_id, params = _params(entry)
    extra: list[dict[str, Any]] = []
    if "sha" not in remote.ref_types:
        extra.append({"ref_types": [*remote.ref_types, "sha"]})
    if remote.all_saltenvs:
        extra.append({"all_saltenvs": commit})
    elif saltenv == "base":
        extra.append({"base": commit})
        if not is_hex(remote.base):  # the branch that served base is not a saltenv of its own now
            extra.append({"saltenv_blacklist": [*remote.saltenv_blacklist, re.escape(remote.base)]})
    else:
        extra.append({"saltenv": _saltenv_param(remote, saltenv, commit)})
    return {entry_id: params + extra}


def _pin_git_pillar(entry: Any, remote: Remote, commit: str, git_pillar_base: str) -> Any:
    entry_id, params = _params(entry)
    if remote.branch == "__env__":
        return {entry_id: params + [{"all_saltenvs": commit}]}
    env = remote.pillar_env(None, None, git_pillar_base)
    parts = entry_id.split(None, 1)
    url_text = parts[1] if len(parts) == 2 and parts[0] == remote.branch else entry_id.strip()
    # the same clone (its directory is named after the entry as configured), the same pillar environment
    return {f"{commit} {url_text}": params + [{"name": remote.cache_key}, {"env": env}]}


def pinned(opts: Mapping[str, Any], rev: str, saltenv: str | None = None) -> Pinned:
    """opts in which every git remote whose clone has rev serves it (see the module doc); the pins made.
    Raises GitConfigError for a bad configuration."""
    from runtime.gitfs import uses_gitfs

    env = saltenv or "base"
    cachedir = str(opts.get("cachedir") or "")
    out = dict(opts)
    pins: list[Pin] = []
    if uses_gitfs(opts):
        entries = list(opts.get("gitfs_remotes") or [])
        for index, remote in enumerate(gitfs_remotes(opts)):
            commit = resolve(CachedRepo(remote, cache_root(cachedir, GITFS)), rev)
            if commit is not None:
                entries[index] = _pin_gitfs(entries[index], remote, commit, env)
                pins.append(Pin(remote, commit))
        out["gitfs_remotes"] = entries
    ext = opts.get("ext_pillar")
    if isinstance(ext, list):
        base = option(opts, "git_pillar_base", str)
        new_ext: list[Any] = []
        for number, item in enumerate(ext):
            if not (isinstance(item, dict) and "git" in item):
                new_ext.append(item)
                continue
            args = item["git"]
            items = list(args) if isinstance(args, list) else [args]
            for index, remote in enumerate(git_pillar_remotes(opts, items, f"ext_pillar[{number}] git")):
                commit = resolve(CachedRepo(remote, cache_root(cachedir, GIT_PILLAR)), rev)
                if commit is not None:
                    items[index] = _pin_git_pillar(items[index], remote, commit, base)
                    pins.append(Pin(remote, commit))
            new_ext.append({**item, "git": items})
        out["ext_pillar"] = new_ext
    return Pinned(out, pins)
