"""One remote's cached clone: ``<cachedir>/<role>/<hash>/`` (Salt's layout: one directory per remote).

The directory holds ``repo.git`` (a bare repository whose ``origin`` is the
remote, branches fetched to ``refs/remotes/origin/*`` and tags to
``refs/tags/*`` as Salt's default refspecs do), ``update.lk`` (the fetch lock,
``runtime.gitfs.lock``) and ``fetched.json`` (when the last fetch was tried,
whether it worked, and its error).

What readers see is always the refs of the last *successful* fetch: a fetch
that fails (unreachable remote, refused credentials) changes no ref, so the
last good revision is served and the error names the remote.  A branch that
was force-pushed is followed, as Salt follows it (its refspecs start with
``+``), and the fetch result says so.  A cache that is not a usable repository
any more (files lost or damaged) is moved aside and cloned again by the next
fetch; until then, reading it is an error that says how to recover.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field

import pygit2

from runtime.gitfs import lock
from runtime.gitfs.remotes import Remote, is_hex

# libgit2 network limits, in milliseconds: a remote that does not answer cannot hang a fetch
pygit2.settings.server_connect_timeout = 15_000
pygit2.settings.server_timeout = 60_000

LOCK_WAIT = 120.0  # seconds a fetch waits for another process's fetch of the same repository


class GitCacheError(Exception):
    """A remote's cache cannot be used; the message names the remote (never its credentials)."""


@dataclass
class FetchResult:
    """What one fetch of one remote did."""

    remote: Remote
    ok: bool
    changed: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # force-pushes, re-clones, branches added or removed
    skipped: bool = False  # another process fetched it while we waited for the lock

    def summary(self) -> str:
        if not self.ok:
            return f"{self.remote.label}: fetch failed: {self.error}"
        if self.skipped:
            return f"{self.remote.label}: fetched by another process just now"
        return f"{self.remote.label}: {'updated' if self.changed else 'up to date'}"


def cache_root(cachedir: str, role: str) -> str:
    return os.path.join(cachedir, role)


class _Callbacks(pygit2.RemoteCallbacks):
    def __init__(self, remote: Remote, credentials: pygit2.UserPass | pygit2.Keypair | None):
        super().__init__(credentials=credentials)
        self._verify = remote.ssl_verify

    def certificate_check(self, certificate: None, valid: bool, host: bytes) -> bool:
        return bool(valid) or not self._verify


def credentials(remote: Remote) -> pygit2.UserPass | pygit2.Keypair | None:
    """libgit2 credentials from the remote's auth params (Salt's checks: no password over plain http)."""
    auth = remote.auth
    scheme = remote.url.split("://", 1)[0].lower() if "://" in remote.url else ""
    if auth.pubkey or auth.privkey:
        if not (auth.pubkey and auth.privkey):
            raise GitCacheError(f"{remote.label}: ssh authentication needs both 'pubkey' and 'privkey'")
        for path in (auth.pubkey, auth.privkey):
            if not os.path.isfile(path):
                raise GitCacheError(f"{remote.label}: key file {path} does not exist")
        user = auth.user or (remote.url.split("://", 1)[1].split("@", 1)[0] if "@" in remote.url else "git")
        return pygit2.Keypair(user, auth.pubkey, auth.privkey, auth.passphrase or "")
    if auth.user or auth.password:
        if not (auth.user and auth.password):
            raise GitCacheError(f"{remote.label}: http authentication needs both 'user' and 'password'")
        if scheme == "http" and not auth.insecure_auth:
            raise GitCacheError(f"{remote.label}: authentication over plain http is refused; use https, or set "
                                "insecure_auth: true for this remote")
        return pygit2.UserPass(auth.user, auth.password)
    return None


def _scrub(text: str, remote: Remote) -> str:
    """An error text from libgit2 without the remote's credentials."""
    text = text.replace(remote.url, remote.display_url)
    for secret in remote.auth.secrets():
        text = text.replace(secret, "****")
    return text.strip().rstrip(".")


class CachedRepo:
    """The cache of one remote: fetch it, read its refs and trees."""

    def __init__(self, remote: Remote, root: str):
        self.remote = remote
        self.dir = os.path.join(root, remote.cache_key)
        self.git_dir = os.path.join(self.dir, "repo.git")
        self.lock_path = os.path.join(self.dir, "update.lk")
        self.state_path = os.path.join(self.dir, "fetched.json")
        self._repo: pygit2.Repository | None = None
        self._stamp: tuple[int, int] | None = None

    # -- state ------------------------------------------------------------------------
    def state(self) -> dict:
        """The record of the last fetch ({} when there was none)."""
        try:
            with open(self.state_path, encoding="utf-8") as fh:
                data = json.load(fh)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_state(self, data: dict) -> None:
        tmp = f"{self.state_path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.state_path)

    def stamp(self) -> tuple[int, int] | None:
        """Changes whenever a fetch ends (readers reopen the repository then)."""
        try:
            st = os.stat(self.state_path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_ino)

    def due(self, now: float | None = None) -> bool:
        """True when update_interval has passed since the last fetch was tried."""
        last = self.state().get("tried")
        return not isinstance(last, (int, float)) or (now or time.time()) - last >= self.remote.update_interval

    # -- reading ----------------------------------------------------------------------
    def exists(self) -> bool:
        return os.path.isdir(self.git_dir)

    def open(self) -> pygit2.Repository | None:
        """The repository as last fetched; None when it was never fetched.

        Raises GitCacheError when the cache is damaged.
        """
        stamp = self.stamp()
        if self._repo is not None and stamp == self._stamp:
            return self._repo
        if not self.exists():
            self._repo = None
            return None
        try:
            repo = pygit2.Repository(self.git_dir)
            _check(repo)
        except (pygit2.GitError, KeyError, ValueError) as exc:
            self._repo = None
            raise GitCacheError(f"{self.remote.label}: the cached clone at {self.git_dir} is damaged "
                                f"({_scrub(str(exc), self.remote)}); the next fetch clones it again "
                                "(`saltpan fileserver update` on a master, `saltpan compile --fetch` without one)") from None
        self._repo, self._stamp = repo, stamp
        return repo

    def require(self) -> pygit2.Repository:
        repo = self.open()
        if repo is None:
            raise GitCacheError(f"{self.remote.label} has not been fetched yet (no clone in {self.dir}): run "
                                "`saltpan compile --fetch`, or let the master fetch it (`saltpan fileserver update`)")
        return repo

    def branches(self) -> list[str]:
        repo = self.require()
        prefix = "refs/remotes/origin/"
        return sorted(r[len(prefix):] for r in repo.references if r.startswith(prefix) and r != prefix + "HEAD")

    def tags(self) -> list[str]:
        repo = self.require()
        return sorted(r[len("refs/tags/"):] for r in repo.references if r.startswith("refs/tags/"))

    def commit(self, ref: str, ref_types: tuple[str, ...] = ("branch", "tag", "sha")) -> pygit2.Commit | None:
        """The commit a branch, tag or commit id names, trying ref_types in order (Salt's get_tree)."""
        repo = self.require()
        for ref_type in ref_types:
            found = None
            if ref_type == "branch":
                found = _peel(repo, f"refs/remotes/origin/{ref}")
            elif ref_type == "tag":
                found = _peel(repo, f"refs/tags/{ref}")
            elif ref_type == "sha" and is_hex(ref) and len(ref) >= 4:
                try:
                    obj = repo.revparse_single(ref)
                    found = obj.peel(pygit2.Commit)
                except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
                    found = None
            if found is not None:
                return found
        return None

    # -- fetching ---------------------------------------------------------------------
    def fetch(self, lock_wait: float = LOCK_WAIT) -> FetchResult:
        """Fetch the remote into the cache (clone it first when needed); never raises for remote trouble."""
        started = time.time()
        try:
            with lock.held(self.lock_path, lock_wait) as waited:
                last_ok = self.state().get("ok_at")
                if waited and isinstance(last_ok, (int, float)) and last_ok >= started:
                    return FetchResult(self.remote, True, skipped=True)
                return self._fetch_locked()
        except lock.LockTimeout:
            return FetchResult(self.remote, False, error=f"another process has been fetching it for more than "
                               f"{lock_wait:g} s ({self.lock_path})")
        except GitCacheError as exc:
            return self._failed(str(exc))
        except OSError as exc:
            return FetchResult(self.remote, False, error=f"cannot write its cache {self.dir}: {exc.strerror}")

    def _failed(self, error: str) -> FetchResult:
        state = self.state()
        state.update(tried=time.time(), error=error)
        try:
            self._write_state(state)
        except OSError:
            pass
        return FetchResult(self.remote, False, error=error)

    def _fetch_locked(self) -> FetchResult:
        notes: list[str] = []
        _clear_stale_locks(self.git_dir)
        repo = self._open_for_fetch(notes)
        before = _refs(repo)
        try:
            _origin(repo, self.remote).fetch(callbacks=_Callbacks(self.remote, credentials(self.remote)),
                                              prune=pygit2.enums.FetchPrune.PRUNE,
                                              proxy=self.remote.proxy or None)
        except (pygit2.GitError, ValueError, OSError) as exc:
            detail = _scrub(str(exc), self.remote)
            if not _usable(repo):
                notes.append(f"{self.remote.label}: the cached clone was damaged; cloned again")
                repo = self._reclone()
                before = {}
                try:
                    _origin(repo, self.remote).fetch(
                        callbacks=_Callbacks(self.remote, credentials(self.remote)),
                        prune=pygit2.enums.FetchPrune.PRUNE, proxy=self.remote.proxy or None)
                except (pygit2.GitError, ValueError, OSError) as exc2:
                    return self._failed(_scrub(str(exc2), self.remote))
            else:
                result = self._failed(detail)
                if before:
                    result.notes.append(f"{self.remote.label}: serving the last good revision fetched "
                                        f"{_ago(self.state().get('ok_at'))}")
                return result
        after = _refs(repo)
        notes.extend(self._changes(repo, before, after))
        now = time.time()
        self._write_state({"tried": now, "ok_at": now, "error": None, "url": self.remote.display_url})
        self._repo = None
        return FetchResult(self.remote, True, changed=before != after, notes=notes)

    def _open_for_fetch(self, notes: list[str]) -> pygit2.Repository:
        if not self.exists():
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            return self._init()
        try:
            repo = pygit2.Repository(self.git_dir)
            _check(repo)
            return repo
        except (pygit2.GitError, KeyError, ValueError) as exc:
            notes.append(f"{self.remote.label}: the cached clone was damaged ({_scrub(str(exc), self.remote)}); "
                         "cloned again")
            return self._reclone()

    def _init(self) -> pygit2.Repository:
        repo = pygit2.init_repository(self.git_dir, bare=True)
        _origin(repo, self.remote)
        return repo

    def _reclone(self) -> pygit2.Repository:
        aside = f"{self.git_dir}.damaged-{os.getpid()}-{int(time.time())}"
        os.rename(self.git_dir, aside)
        shutil.rmtree(aside, ignore_errors=True)
        return self._init()

    def _changes(self, repo: pygit2.Repository, before: dict[str, str], after: dict[str, str]) -> list[str]:
        notes = []
        for name, new in sorted(after.items()):
            old = before.get(name)
            if old is None or old == new or not name.startswith("refs/remotes/origin/"):
                continue
            branch = name[len("refs/remotes/origin/"):]
            try:
                forward = repo.descendant_of(pygit2.Oid(hex=new), pygit2.Oid(hex=old))
            except (pygit2.GitError, KeyError, ValueError):
                forward = False
            if not forward:
                notes.append(f"{self.remote.label}: branch '{branch}' was force-pushed ({old[:10]} is not an "
                             f"ancestor of {new[:10]}); serving {new[:10]}")
        gone = sorted(n for n in before if n not in after)
        if gone:
            notes.append(f"{self.remote.label}: removed on the remote: {', '.join(_short(n) for n in gone)}")
        return notes


def _clear_stale_locks(git_dir: str) -> None:
    """Remove the ``*.lock`` files libgit2 leaves when a fetch is killed (a master stopped mid-fetch).

    Called with ``update.lk`` held: no other fetch of this repository runs, so any such file is stale
    (readers never write); left in place, it would make every later fetch fail to update that ref.
    """
    for top in (git_dir, os.path.join(git_dir, "refs")):
        if not os.path.isdir(top):
            continue
        walk = os.walk(top) if top != git_dir else [(git_dir, [], os.listdir(git_dir))]
        for cur, _dirs, files in walk:
            for name in files:
                if name.endswith(".lock"):
                    try:
                        os.remove(os.path.join(cur, name))
                    except OSError:
                        pass


def _short(refname: str) -> str:
    for prefix in ("refs/remotes/origin/", "refs/tags/"):
        if refname.startswith(prefix):
            kind = "branch" if prefix.startswith("refs/remotes") else "tag"
            return f"{kind} {refname[len(prefix):]}"
    return refname


def _ago(when: object) -> str:
    if not isinstance(when, (int, float)):
        return "earlier"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


def _origin(repo: pygit2.Repository, remote: Remote) -> pygit2.Remote:
    """The 'origin' remote with the configured URL and refspecs (a changed URL in the config is followed)."""
    names = list(repo.remotes.names())
    if "origin" not in names:
        repo.remotes.create("origin", remote.url, remote.refspecs[0])
        for spec in remote.refspecs[1:]:
            repo.remotes.add_fetch("origin", spec)
        return repo.remotes["origin"]
    origin = repo.remotes["origin"]
    if origin.url != remote.url:
        repo.remotes.set_url("origin", remote.url)
    if list(origin.fetch_refspecs) != list(remote.refspecs):
        repo.remotes.delete("origin")
        return _origin(repo, remote)
    return repo.remotes["origin"]


def _refs(repo: pygit2.Repository) -> dict[str, str]:
    out = {}
    for name in repo.references:
        try:
            out[name] = str(repo.references[name].resolve().target)
        except (KeyError, pygit2.GitError):
            continue
    return out


def _peel(repo: pygit2.Repository, refname: str) -> pygit2.Commit | None:
    try:
        ref = repo.lookup_reference(refname)
    except (KeyError, pygit2.InvalidSpecError, ValueError):
        return None
    try:
        return ref.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError):
        return None


def _check(repo: pygit2.Repository) -> None:
    """Raise when a ref of the repository leads to a commit or tree that is not there."""
    for name in repo.references:
        if name.startswith("refs/remotes/") or name.startswith("refs/tags/"):
            ref = repo.references[name].resolve()
            obj = repo.get(ref.target)
            if obj is None:
                raise pygit2.GitError(f"{name} points to the missing object {str(ref.target)[:10]}")
            commit = obj.peel(pygit2.Commit)
            if repo.get(commit.tree_id) is None:
                raise pygit2.GitError(f"the tree of {name} is missing")


def _usable(repo: pygit2.Repository) -> bool:
    try:
        _check(repo)
        return True
    except (pygit2.GitError, KeyError, ValueError):
        return False
