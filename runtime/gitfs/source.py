"""FileSources over git trees, read straight from the cached clones' objects (no checkout).

``GitfsSource`` serves Salt's gitfs backend: every exposed branch and tag of
every remote is a saltenv (``base`` is the remote's ``base`` branch), files
live under the remote's ``mountpoint`` in the salt:// namespace and come from
its ``root`` in the repository, and the first remote that has a file wins
(Salt's GitFS.find_file).  ``TreeMounts`` is the same reading over fixed trees
(git_pillar's roots).  ``BackendChain`` puts backends together in
``fileserver_backend`` order: the first backend that has a file serves it, and
the saltenvs are the union of the backends' (Salt's Fileserver).

A remote serves only what lies beneath its ``root``: a symlink whose target is
outside the root (or outside the repository) serves nothing and is not listed.
The master's file server reads a file with ``open()``: the blob of the commit
being served, held in memory, so what was found is what is sent.

A remote that was never fetched or whose cache is damaged serves nothing; the
reason is in ``problems()`` for the caller to report (it names the remote).
"""

from __future__ import annotations

import posixpath
import stat
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import pygit2

from compiler.roots import FetchedFile, FileSource, SourceFile, clean_relpath, valid_saltenv
from runtime.gitfs.remotes import Remote, is_hex
from runtime.gitfs.repo import CachedRepo, GitCacheError

SYMLINK_DEPTH = 100  # Salt's SYMLINK_RECURSE_DEPTH
TEXT_CACHE_SIZE = 20_000  # decoded files kept per source
BLOB_CACHE_BYTES = 64 * 1024 * 1024  # bytes of the files last served, kept per source (a larger file is read per chunk)
BLOB_CACHE_FILES = 64


@dataclass(frozen=True)
class Blob:
    """A file found in a tree; its bytes are read (inflated) only when ``data`` is first asked for."""

    oid: pygit2.Oid
    mode: int
    obj: pygit2.Blob

    @property
    def data(self) -> bytes:
        return self.obj.data


def find_blob(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> Blob | None:
    """The file at path in tree, following symlinks inside the tree; None for a directory or nothing.

    tree is the remote's root: a link leading out of it (``../x``, an absolute target) serves nothing.
    Tree entries are looked at without reading the files' contents.
    """
    for _ in range(SYMLINK_DEPTH):
        try:
            entry = tree[path]
        except (KeyError, ValueError):
            return None
        if not isinstance(entry, pygit2.Blob):
            return None  # a directory, or a submodule's commit
        if stat.S_ISLNK(entry.filemode):
            target = entry.data.decode("utf-8", "replace")
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or joined == ".." or joined.startswith("../"):
                return None  # a link leading out of the root serves nothing
            path = joined
            continue
        return Blob(entry.id, entry.filemode, entry)
    return None


def walk_files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "",
               top: pygit2.Tree | None = None) -> Iterator[str]:
    """Every file under tree, and every symlink that leads to a file inside it; submodules are skipped,
    as Salt skips them."""
    top = tree if top is None else top
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if isinstance(entry, pygit2.Tree):
            yield from walk_files(repo, entry, path + "/", top)
        elif isinstance(entry, pygit2.Blob):
            if stat.S_ISLNK(entry.filemode) and find_blob(repo, top, path) is None:
                continue  # a link out of the root, to a directory or to nothing: not a file here
            yield path


def subtree(repo: pygit2.Repository, tree: pygit2.Tree, root: str) -> pygit2.Tree | None:
    if not root:
        return tree
    try:
        obj = tree[root]
    except (KeyError, ValueError):
        return None
    return obj if isinstance(obj, pygit2.Tree) else None


def in_mount(relpath: str, mountpoint: str) -> str | None:
    """relpath inside a mountpoint ('' mounts at the top), or None when it is outside it."""
    if not mountpoint:
        return relpath
    if relpath.startswith(mountpoint + "/"):
        return relpath[len(mountpoint) + 1:]
    return None


@dataclass(frozen=True)
class Mount:
    """One git tree mounted in the salt:// namespace."""

    cached: CachedRepo
    commit: pygit2.Commit
    ref: str  # the branch/tag/commit it came from (for display)
    root: str
    mountpoint: str

    def display(self, repo_path: str) -> str:
        return f"{self.cached.remote.display_url}@{self.ref}:{repo_path}"

    def find(self, relpath: str) -> tuple[Blob, str] | None:
        """The blob at relpath (a cleaned salt:// path) and its path in the repository; None when the
        path is outside the mountpoint, or nothing beneath the root has it."""
        inner = in_mount(relpath, self.mountpoint)
        if inner is None:
            return None
        repo = self.cached.require()
        top = subtree(repo, self.commit.tree, self.root)
        if top is None:
            return None
        blob = find_blob(repo, top, inner)
        return (blob, f"{self.root}/{inner}" if self.root else inner) if blob is not None else None

    def files(self) -> list[str]:
        repo = self.cached.require()
        top = subtree(repo, self.commit.tree, self.root)
        if top is None:
            return []
        prefix = f"{self.mountpoint}/" if self.mountpoint else ""
        return [prefix + path for path in walk_files(repo, top)]


@dataclass(frozen=True)
class BlobFile:
    """A file as the master's file server serves it from git: the blob's bytes, read once."""

    data: bytes
    oid: str
    mode: int  # 0o755 for an executable blob, else 0o644
    display: str

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def identity(self) -> tuple[str, str]:
        """The blob id: the same bytes whenever it is the same (the file server's hash cache key)."""
        return ("git", self.oid)

    def pread(self, size: int, offset: int) -> bytes:
        return self.data[offset:offset + size]

    def close(self) -> None:
        pass


def _file_mode(blob: Blob) -> int:
    return 0o755 if blob.mode == pygit2.GIT_FILEMODE_BLOB_EXECUTABLE else 0o644


class _MountReader:
    """get / fetch / open / list_files over a list of mounts per saltenv; SourceFiles cached by blob, and
    the bytes of the files the file server served last (a minion downloads a large file chunk by chunk:
    each chunk is a request, and inflating the blob again for each one would cost its whole size)."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str], tuple[pygit2.Oid, str, SourceFile]] = {}
        self._bytes: OrderedDict[str, bytes] = OrderedDict()
        self._bytes_held = 0

    def _blob_bytes(self, blob: Blob) -> bytes:
        key = str(blob.oid)
        data = self._bytes.get(key)
        if data is not None:
            self._bytes.move_to_end(key)
            return data
        data = blob.data
        if len(data) <= BLOB_CACHE_BYTES:
            self._bytes[key] = data
            self._bytes_held += len(data)
            while self._bytes_held > BLOB_CACHE_BYTES or len(self._bytes) > BLOB_CACHE_FILES:
                _, dropped = self._bytes.popitem(last=False)
                self._bytes_held -= len(dropped)
        return data

    def mounts(self, saltenv: str) -> list[Mount]:
        raise NotImplementedError

    def _find(self, saltenv: str, relpath: str) -> tuple[Blob, str, Mount] | None:
        if not valid_saltenv(saltenv):
            return None
        rel = clean_relpath(relpath)
        for mount in self.mounts(saltenv):
            try:
                found = mount.find(rel)
            except GitCacheError:
                continue  # damaged since the saltenv was resolved: reported by problems()
            if found is not None:
                return found[0], found[1], mount
        return None

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        found = self._find(saltenv, relpath)
        if found is None:
            return None
        blob, repo_path, mount = found
        rel = clean_relpath(relpath)
        display = mount.display(repo_path)
        cached = self._texts.get((saltenv, rel))
        if cached is not None and cached[0] == blob.oid and cached[1] == display:
            return cached[2]
        text = SourceFile(saltenv, rel, display, blob.data.decode("utf-8", "replace"))
        if len(self._texts) >= TEXT_CACHE_SIZE:
            self._texts.clear()
        self._texts[(saltenv, rel)] = (blob.oid, display, text)
        return text

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        found = self._find(saltenv, relpath)
        if found is None:
            return None
        blob, repo_path, mount = found
        return FetchedFile(blob.data, mount.display(repo_path), _file_mode(blob))

    def open(self, saltenv: str, relpath: str) -> BlobFile | None:
        """The file at relpath for the file server (None when no mount has it); relpath is cleaned here
        (``CompileError`` access_denied for ``..``, absolute paths, backslashes, NUL)."""
        found = self._find(saltenv, relpath)
        if found is None:
            return None
        blob, repo_path, mount = found
        return BlobFile(self._blob_bytes(blob), str(blob.oid), _file_mode(blob), mount.display(repo_path))

    def list_files(self, saltenv: str) -> list[str]:
        out: set[str] = set()
        for mount in self.mounts(saltenv):
            out.update(mount.files())
        return sorted(out)


class GitfsSource(_MountReader):
    """Salt's gitfs backend over the cached clones of ``gitfs_remotes``."""

    def __init__(self, remotes: list[Remote], cache_root: str):
        super().__init__()
        self.repos = [CachedRepo(remote, cache_root) for remote in remotes]
        self._problems: dict[str, str] = {}
        self._envs: tuple[tuple, list[str]] | None = None
        self._mounts: dict[str, tuple[tuple, list[Mount]]] = {}

    def problems(self) -> list[str]:
        """Why some remotes serve nothing (not fetched yet, damaged cache), one line per remote."""
        self.saltenvs()
        return list(self._problems.values())

    def _stamps(self) -> tuple:
        return tuple(repo.stamp() for repo in self.repos)

    def saltenvs(self) -> list[str]:
        stamps = self._stamps()
        if self._envs is not None and self._envs[0] == stamps:
            return list(self._envs[1])
        envs: set[str] = set()
        for cached in self.repos:
            try:
                if cached.open() is None:
                    cached.require()  # raises: not fetched yet
                envs.update(cached.remote.envs_from_refs(cached.branches(), cached.tags()))
                self._problems.pop(cached.remote.id, None)
            except GitCacheError as exc:
                self._problems[cached.remote.id] = str(exc)
        self._envs = (stamps, sorted(envs))
        return sorted(envs)

    def serves(self, saltenv: str) -> bool:
        """Whether saltenv is one of this backend's: a branch or tag saltenv, a commit id (ref_types
        sha), or any saltenv when a remote has a ``fallback``."""
        if not valid_saltenv(saltenv):
            return False
        return saltenv in self.saltenvs() or bool(self.mounts(saltenv))

    def mounts(self, saltenv: str) -> list[Mount]:
        stamps = self._stamps()
        cached_mounts = self._mounts.get(saltenv)
        if cached_mounts is not None and cached_mounts[0] == stamps:
            return cached_mounts[1]
        found = self._resolve(saltenv)
        if saltenv in self.saltenvs():  # commit-id saltenvs are resolved each time: the cache stays bounded
            self._mounts[saltenv] = (stamps, found)
        return found

    def _resolve(self, saltenv: str) -> list[Mount]:
        known = saltenv in self.saltenvs()
        out = []
        for cached in self.repos:
            remote = cached.remote
            if not (known or is_hex(saltenv) or remote.fallback):
                continue
            if not remote.exposes(saltenv):
                continue
            ref = remote.ref_for(saltenv)
            if ref is None:
                continue
            try:
                if cached.open() is None:
                    continue
                commit = cached.commit(ref, remote.ref_types)
                if commit is None and remote.fallback:
                    ref = remote.fallback
                    commit = cached.commit(ref, remote.ref_types)
            except GitCacheError:
                continue  # reported by problems()
            if commit is None:
                continue
            out.append(Mount(cached, commit, ref, remote.root_for(saltenv), remote.mountpoint_for(saltenv)))
        return out


class TreeMounts(_MountReader):
    """Fixed trees per saltenv: {saltenv: [Mount, ...]} (git_pillar's pillar_roots)."""

    def __init__(self, mounts: dict[str, list[Mount]]):
        super().__init__()
        self._mounts = mounts

    def saltenvs(self) -> list[str]:
        return list(self._mounts)

    def mounts(self, saltenv: str) -> list[Mount]:
        return self._mounts.get(saltenv, [])


class BackendChain:
    """Backends in ``fileserver_backend`` order: first to have a file serves it; saltenvs are the union."""

    def __init__(self, backends: list[FileSource]):
        self.backends = backends

    def saltenvs(self) -> list[str]:
        out: list[str] = []
        for backend in self.backends:
            out.extend(env for env in backend.saltenvs() if env not in out)
        return out

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        for backend in self.backends:
            found = backend.get(saltenv, relpath)
            if found is not None:
                return found
        return None

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        for backend in self.backends:
            found = backend.fetch(saltenv, relpath)
            if found is not None:
                return found
        return None

    def list_files(self, saltenv: str) -> list[str]:
        out: set[str] = set()
        for backend in self.backends:
            out.update(backend.list_files(saltenv))
        return sorted(out)

    def problems(self) -> list[str]:
        out: list[str] = []
        for backend in self.backends:
            report = getattr(backend, "problems", None)
            if callable(report):
                out.extend(report())
        return out
