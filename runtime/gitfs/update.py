"""Fetch the git remotes of a configuration: ``compile --fetch`` now, a master on its update intervals.

``configured(opts)`` lists the cached repositories of every gitfs remote (when
``fileserver_backend`` has gitfs) and of every remote of every ``git``
ext_pillar entry.  ``update(opts)`` fetches them one after the other; each
fetch holds its repository's lock, so a master's update and a ``compile
--fetch`` running beside it never fetch the same repository at once.  A remote
that fails keeps its last good revision; its result carries the error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from runtime.gitfs import uses_gitfs
from runtime.gitfs.remotes import GIT_PILLAR, GITFS, git_pillar_remotes, gitfs_remotes
from runtime.gitfs.repo import CachedRepo, FetchResult, cache_root


def configured(opts: Mapping[str, Any]) -> list[CachedRepo]:
    """Every configured remote's cache (gitfs first, then git_pillar in ext_pillar order). Raises GitConfigError."""
    cachedir = str(opts.get("cachedir") or "")
    repos: list[CachedRepo] = []
    if uses_gitfs(opts):
        repos += [CachedRepo(r, cache_root(cachedir, GITFS)) for r in gitfs_remotes(opts)]
    seen: set[str] = set()
    for index, entry in enumerate(opts.get("ext_pillar") or []):
        if not isinstance(entry, dict) or "git" not in entry:
            continue
        args = entry["git"]
        items = args if isinstance(args, list) else [args]
        for remote in git_pillar_remotes(opts, items, f"ext_pillar[{index}] git"):
            if remote.cache_key not in seen:  # one repository may back several entries
                seen.add(remote.cache_key)
                repos.append(CachedRepo(remote, cache_root(cachedir, GIT_PILLAR)))
    return repos


def update(opts: Mapping[str, Any], only_due: bool = False, now: float | None = None) -> list[FetchResult]:
    """Fetch every configured remote (only those whose update interval passed, with only_due)."""
    now = time.time() if now is None else now
    return [repo.fetch() for repo in configured(opts) if not only_due or repo.due(now)]
