"""git_pillar: ``ext_pillar: - git: [...]`` compiled as Salt 3008 compiles it (salt/pillar/git_pillar.py).

Each remote gives a tree: its branch (``__env__`` follows the pillarenv, else
the saltenv, ``base`` meaning ``base``/``git_pillar_base``), or a tag of that
name, under its ``root``.  The remote's data belongs to one pillar environment
(``env``, else the branch, ``base`` for the base branch).  For each remote
without a ``mountpoint`` the ordinary pillar compiler runs over that tree as
the only ``pillar_roots`` of its environment (its own top.sls first; with
``git_pillar_includes`` the other remotes of the same environment follow as
further roots, a mounted remote under its mountpoint), without ext_pillar; the
results merge with ``pillar_source_merging_strategy``.  With ``pillarenv`` set,
only remotes of that environment count.

Nothing here fetches: trees come from the cached clones (``runtime.gitfs.update``
fetches them).  A remote that cannot be read (never fetched, damaged cache, its
fixed branch missing, its ``root`` missing) makes the driver fail with a message
naming the remote; an ``__env__`` remote without a branch for the environment
contributes nothing, as in Salt.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler import merge
from compiler.pillar import PillarCompiler
from runtime.config import option
from runtime.gitfs.remotes import GitConfigError, Remote, git_pillar_remotes, is_hex
from runtime.gitfs.repo import CachedRepo, GitCacheError, cache_root
from runtime.gitfs.source import Mount, TreeMounts, subtree

log = logging.getLogger(__name__)


class GitPillarError(Exception):
    """A git_pillar remote that cannot be compiled; the message names it."""


@dataclass(frozen=True)
class Checkout:
    """A remote resolved for one compile: its tree and the pillar environment it feeds."""

    remote: Remote
    mount: Mount
    env: str


def checkout(cached: CachedRepo, pillarenv: str | None, saltenv: str | None, git_pillar_base: str
             ) -> Checkout | None:
    """The remote's tree for this compile; None when an ``__env__`` remote has no such branch."""
    remote = cached.remote
    target = remote.checkout_target(pillarenv, saltenv)
    # a commit id serves too (saltpan's extension: how `compile --diff REV` pins a remote to a commit)
    types = ("branch", "tag", "sha") if is_hex(target) and "sha" in remote.ref_types else ("branch", "tag")
    try:
        commit = cached.commit(target, types)
        ref = target
        if commit is None and remote.fallback:
            ref = remote.fallback
            commit = cached.commit(ref, ("branch", "tag"))
        if commit is None:
            if remote.branch == "__env__":
                log.info("%s: no branch or tag '%s' for this environment; it contributes nothing", remote.label,
                         target)
                return None
            known = ", ".join(cached.branches()) or "none"
            raise GitPillarError(f"{remote.label}: no branch or tag '{target}' (branches: {known})")
        repo = cached.require()
    except GitCacheError as exc:
        raise GitPillarError(str(exc)) from None
    if remote.root and subtree(repo, commit.tree, remote.root) is None:
        raise GitPillarError(f"{remote.label}: root '{remote.root}' is not a directory of {ref}")
    env = remote.pillar_env(pillarenv, saltenv, git_pillar_base)
    return Checkout(remote, Mount(cached, commit, ref, remote.root, remote.mountpoint), env)


def compile_git_pillar(opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any], repos: list[Any],
                       pillarenv: str | None, saltenv: str | None) -> dict:
    """The pillar data of one ``git`` ext_pillar entry for a minion.

    ``opts`` is the configuration; ``pillarenv`` / ``saltenv`` are the compile's
    (a request's or the configuration's).  Raises GitConfigError or GitPillarError.
    """
    remotes = git_pillar_remotes(opts, repos)
    root = cache_root(str(opts.get("cachedir") or ""), "git_pillar")
    base = option(opts, "git_pillar_base", str)
    checkouts: list[Checkout] = []
    problems: list[str] = []
    for remote in remotes:
        try:
            found = checkout(CachedRepo(remote, root), pillarenv, saltenv, base)
        except GitPillarError as exc:
            problems.append(str(exc))
            continue
        if found is not None:
            checkouts.append(found)
    strategy = option(opts, "pillar_source_merging_strategy", str)
    merge_lists = option(opts, "pillar_merge_lists", bool)
    includes = option(opts, "git_pillar_includes", bool)
    data: dict = {}
    for item in checkouts:
        if pillarenv and item.env != pillarenv:
            continue
        if item.remote.mountpoint:
            continue  # a mounted remote is only read as part of the others' roots
        mounts = [item.mount]
        if includes:
            mounts += [other.mount for other in checkouts if other.env == item.env and other is not item]
        nested = dict(opts)
        nested["pillar_roots"] = {item.env: []}
        nested["pillarenv"] = pillarenv
        nested["saltenv"] = item.env
        compiler = PillarCompiler(nested, TreeMounts({item.env: mounts}))
        result = compiler.compile(minion_id, grains, pillarenv=pillarenv, saltenv=item.env, ext=False)
        for err in result.errors:
            log.warning("git_pillar %s (minion %s): %s", item.remote.label, minion_id, err)
        data = merge.merge_into(data, result.pillar, strategy, merge_lists)
    if problems:
        raise GitPillarError("; ".join(problems))
    return data


__all__ = ["GitConfigError", "GitPillarError", "compile_git_pillar", "checkout"]
