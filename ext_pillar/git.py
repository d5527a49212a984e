"""ext_pillar git: pillar trees in git repositories (Salt's git_pillar).

    ext_pillar:
      - git:
        - master https://git.example.com/pillar.git         # '<branch> <url>'
        - __env__ file:///srv/git/pillar.git:               # the branch follows pillarenv / saltenv
          - root: pillar
          - env: base
        - file:///srv/git/extra.git                         # a bare URL: git_pillar_branch

Each remote's own top.sls and sls files are compiled like pillar_roots of one
environment; the reading, the options and the differences from Salt are in
``runtime.gitfs.pillar`` and docs/gitfs.md.  Repositories are read from the
cached clones under ``<cachedir>/git_pillar/``: ``saltpan compile --fetch`` or
the master fetches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ext_pillar._errors import DriverError


def ext_pillar(minion_id: str, pillar: dict, *repos: Any, opts: Mapping[str, Any] | None = None,
               grains: Mapping[str, Any] | None = None) -> dict:
    from runtime.gitfs.pillar import GitConfigError, GitPillarError, compile_git_pillar

    opts = opts or {}
    if not repos:
        raise DriverError("no remotes configured: use `- git: ['<branch> <url>', ...]`")
    try:
        return compile_git_pillar(opts, minion_id, grains or {"id": minion_id}, list(repos),
                                  opts.get("pillarenv") or None, opts.get("saltenv") or None)
    except (GitConfigError, GitPillarError) as exc:
        raise DriverError(str(exc)) from None
