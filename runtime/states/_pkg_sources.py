"""``pkg.installed``'s ``sources``: package files, each named by the package it holds.

``sources`` is Salt's list of one-key mappings ``[{name: source}, ...]`` (a YAML string of
such a list is accepted too, as Salt does). A source is

* an absolute local path (``/srv/pkgs/foo_1.0_all.deb``) or ``file:///srv/...``: used in place;
* ``salt://path[?saltenv=env]``: fetched through ``StateContext.fetch_file`` (the same hook
  ``file.managed`` uses) into a private temporary directory that is removed afterwards.

``http(s)://`` and ``ftp://`` are refused: nothing would verify what was downloaded before it
is installed as root. Download such a file with ``file.managed`` and a ``source_hash`` first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.states import _source

if TYPE_CHECKING:
    from runtime.states import StateContext

_EXAMPLE = "e.g. sources: [{foo: salt://pkgs/foo_1.0_all.deb}]"


class SourcesError(Exception):
    """A ``sources`` entry is malformed, missing or unusable; the message is the state comment."""


@dataclass(frozen=True)
class PackageSource:
    name: str  # the package the entry names (its key)
    source: str  # as written in the state


def parse(sources: Any) -> list[PackageSource]:
    """Salt's ``sources`` list as (package name, source) entries, in order."""
    if isinstance(sources, str):
        import yaml

        try:
            sources = yaml.safe_load(sources)
        except yaml.YAMLError as exc:
            raise SourcesError(f"Invalidly formatted 'sources' parameter: not valid YAML ({exc})") from None
    if not isinstance(sources, list) or not sources:
        raise SourcesError(f"Invalidly formatted 'sources' parameter: expected a list of one-key mappings, {_EXAMPLE}")
    out: list[PackageSource] = []
    seen: set[str] = set()
    for item in sources:
        if not isinstance(item, Mapping) or len(item) != 1:
            raise SourcesError(f"Invalidly formatted 'sources' parameter: item {item!r} is not a mapping of one "
                               f"package name to its file, {_EXAMPLE}")
        (key, value), = item.items()
        if not isinstance(value, str) or not value.strip():
            raise SourcesError(f"Invalidly formatted 'sources' parameter: the source of package '{key}' must be "
                               f"a path or a salt:// URL, not {value!r}")
        name = str(key)
        if name in seen:
            raise SourcesError(f"Package '{name}' is listed more than once in 'sources'")
        seen.add(name)
        out.append(PackageSource(name, value.strip()))
    return out


class Staging:
    """Local paths for package sources; fetched or renamed copies live in one temporary directory."""

    def __init__(self) -> None:
        self._dir: str | None = None

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _directory(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="saltpan-pkg-")  # mode 0700: nobody else can swap a file in
        return self._dir

    def local_path(self, ctx: StateContext, entry: PackageSource, suffix: str) -> str:
        """A local file holding ``entry``'s package whose name ends in ``suffix`` (apt/dnf need it)."""
        scheme = urllib.parse.urlparse(entry.source).scheme
        if scheme == "salt":
            return self._fetched(ctx, entry, suffix)
        if scheme in _source.REMOTE_SCHEMES:
            raise SourcesError(f"Source {entry.source} for package '{entry.name}' is refused: {scheme}:// package "
                               "files are not verified before they would be installed; fetch the file with "
                               "file.managed and a source_hash, then name its local path in 'sources'")
        if scheme not in ("", "file"):
            raise SourcesError(f"Source {entry.source} for package '{entry.name}' has an unsupported URL scheme "
                               f"'{scheme}' (use an absolute path or salt://)")
        path = urllib.parse.unquote(urllib.parse.urlparse(entry.source).path) if scheme == "file" else entry.source
        if not os.path.isabs(path):
            raise SourcesError(f"Source {entry.source} for package '{entry.name}' is not an absolute path "
                               "or a salt:// URL")
        if not os.path.exists(path):
            raise SourcesError(f"Source file {path} for package '{entry.name}' does not exist")
        if not os.path.isfile(path):
            raise SourcesError(f"Source {path} for package '{entry.name}' is not a regular file")
        if path.endswith(suffix):
            return path
        link = os.path.join(self._directory(), f"{_safe(entry.name)}{suffix}")
        os.symlink(os.path.abspath(path), link)
        return link

    def _fetched(self, ctx: StateContext, entry: PackageSource, suffix: str) -> str:
        try:
            got = _source.fetch(ctx, entry.source)
        except _source.SourceError as exc:
            raise SourcesError(f"Unable to fetch {entry.source} for package '{entry.name}': {exc}") from None
        if got is None:
            raise SourcesError(f"Source file {entry.source} for package '{entry.name}' not found in saltenv "
                               f"'{ctx.saltenv}'")
        base = os.path.basename(entry.source.partition("?")[0].rstrip("/")) or entry.name
        if not base.endswith(suffix):
            base += suffix
        path = os.path.join(self._directory(), f"{_safe(entry.name)}-{_safe(base)}")
        with open(path, "xb") as handle:
            handle.write(got.data)
        return path


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._+-" else "_" for c in text)
