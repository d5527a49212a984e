"""Fetch the git remotes of a configuration: ``compile --fetch``, a master on its update intervals and on
``saltpan fileserver update``, every masterless ``saltpan call``.

``configured(opts)`` lists the cached repositories of every gitfs remote (when
``fileserver_backend`` has gitfs) and of every remote of every ``git``
ext_pillar entry.  ``update(opts)`` fetches them one after the other; each
fetch holds its repository's lock, so a master's update and a ``compile
--fetch`` running beside it never fetch the same repository at once.  A remote
that fails keeps its last good revision; its result carries the error.

``select_backends`` reads Salt's ``backend=`` argument of ``fileserver.update``;
``gitfs_event`` is the ``salt/fileserver/gitfs/update`` event's data.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.gitfs.remotes import GIT_PILLAR, GITFS, GitConfigError, backends, configured_remotes
from runtime.gitfs.repo import CachedRepo, FetchResult, cache_root

GITFS_UPDATE_TAG = "salt/fileserver/gitfs/update"
ROLES = (GITFS, GIT_PILLAR)


def configured(opts: Mapping[str, Any], roles: Iterable[str] = ROLES) -> list[CachedRepo]:
    """Every configured remote's cache (gitfs first, then git_pillar in ext_pillar order). Raises GitConfigError."""
    cachedir = str(opts.get("cachedir") or "")
    return [CachedRepo(remote, cache_root(cachedir, remote.role))
            for remote in configured_remotes(opts, tuple(roles))]


def _matches(repo: CachedRepo, patterns: list[str]) -> bool:
    if not patterns:
        return True
    names = (repo.remote.url, repo.remote.display_url, repo.remote.id, repo.remote.name or "")
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns for name in names if name)


def update(opts: Mapping[str, Any], only_due: bool = False, now: float | None = None,
           roles: Iterable[str] = ROLES, remotes: list[str] | None = None) -> list[FetchResult]:
    """Fetch every configured remote of roles (only those whose update interval passed, with only_due;
    only those whose URL matches one of the remotes globs, when given)."""
    now = time.time() if now is None else now
    return [repo.fetch() for repo in configured(opts, roles)
            if _matches(repo, remotes or []) and (not only_due or repo.due(now))]


def select_backends(opts: Mapping[str, Any], requested: list[str]) -> list[str]:
    """Salt's ``backend=`` of ``fileserver.update``: the names given (``git`` is gitfs), or every configured
    backend but the ``-name`` ones when all are negated, or every configured backend when none is given.
    ``git_pillar`` names the git ext_pillar remotes.  Raises GitConfigError for a backend not configured."""
    enabled = backends(opts)
    available = enabled + ([GIT_PILLAR] if configured_remotes(opts, (GIT_PILLAR,)) else [])
    names = [name.strip() for item in requested for name in item.split(",") if name.strip()]
    if not names:
        return enabled
    normal = ["gitfs" if name.lstrip("-") == "git" else name.lstrip("-") for name in names]
    if all(name.startswith("-") for name in names):
        return [name for name in enabled if name not in normal]
    if any(name.startswith("-") for name in names):
        raise GitConfigError(f"backend={','.join(names)}: give backends to update, or only backends to leave out "
                             "(-roots), not both")
    unknown = [name for name in normal if name not in available]
    if unknown:
        raise GitConfigError(f"backend {', '.join(unknown)} is not configured on this master (configured: "
                             f"{', '.join(available)})")
    return list(dict.fromkeys(normal))


def gitfs_event(results: list[FetchResult]) -> dict[str, Any]:
    """The data of ``salt/fileserver/gitfs/update``: Salt's ``changed`` and ``backend``, and the failed
    remotes' errors (each naming its remote)."""
    mine = [r for r in results if r.remote.role == GITFS]
    return {"changed": any(r.changed for r in mine), "backend": "gitfs",
            "errors": [r.summary() for r in mine if not r.ok]}


def masterless_fetch(opts: Mapping[str, Any]) -> list[str]:
    """Fetch every gitfs and git_pillar remote, as Salt's masterless minion does on every call (its local
    file server updates once per call, its git ext_pillar fetches whenever it compiles).  Returns one
    warning per remote that failed (naming it, saying what is served instead) and per note (a
    force-push).  Raises GitConfigError for a bad configuration."""
    warnings: list[str] = []
    for result in update(opts):
        warnings.extend(result.notes)
        if result.ok:
            continue
        if any("serving the last good revision" in note for note in result.notes):
            warnings.append(result.summary())
        else:
            warnings.append(f"{result.summary()}; it was never fetched, so its files are missing")
    return warnings


def log_results(results: list[FetchResult], log: logging.Logger) -> None:
    """One line per remote that failed (error), changed (info), or has something to say (warning)."""
    for result in results:
        if not result.ok:
            log.error("%s", result.summary())
        elif result.changed:
            log.info("%s", result.summary())
        for note in result.notes:
            log.warning("%s", note)
