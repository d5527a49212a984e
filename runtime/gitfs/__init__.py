"""Trees from git: the gitfs file server backend and the git ext_pillar, as Salt masters serve them.

Modules, lightest first (only ``repo`` and what imports it load pygit2, so a
configuration without git remotes never pays for the library):

* ``remotes``  - Salt's config keys and per-remote options -> ``Remote`` values (no I/O);
* ``lock``     - the cross-process lock that keeps two processes from fetching one repo at once;
* ``repo``     - one remote's cached clone under cachedir: fetch, refs, reading tree objects;
* ``source``   - FileSources over git trees: gitfs saltenvs, and roots + gitfs in
  ``fileserver_backend`` order;
* ``pillar``   - the git ext_pillar: each remote's top.sls and sls compiled from its tree;
* ``update``   - fetch every configured remote (``compile --fetch``, a master's GitfsUpdate process and
  ``saltpan fileserver update``, masterless ``saltpan call``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def uses_gitfs(opts: Mapping[str, Any]) -> bool:
    """True when the file server has a git backend (``fileserver_backend`` lists gitfs or git)."""
    backends = opts.get("fileserver_backend") or []
    return isinstance(backends, list) and any(b in ("gitfs", "git") for b in backends)


def uses_git_pillar(opts: Mapping[str, Any]) -> bool:
    """True when ``ext_pillar`` has a ``git`` entry."""
    entries = opts.get("ext_pillar") or []
    return isinstance(entries, list) and any(isinstance(e, dict) and "git" in e for e in entries)
