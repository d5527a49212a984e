"""A FileSource that reads each file and lists each environment once: a fleet compile's view of the trees.

Compiling a thousand minions asks the roots for the same files thousands of
times; ``LocalRoots`` answers each request with a ``stat`` (to notice edits) and
lists a saltenv by walking its directories.  For one ``compile --all`` run the
trees are taken as they are when each file is first read, so every minion
sees the same version of every file, and the repeated system calls go away.
"""

from __future__ import annotations

from compiler.roots import FetchedFile, FileSource, SourceFile

_ABSENT = object()


class SnapshotSource:
    """Memoises saltenvs, get and list_files of another FileSource (fetch is passed through)."""

    def __init__(self, source: FileSource):
        self.source = source
        self._envs: list[str] | None = None
        self._files: dict[tuple[str, str], object] = {}
        self._listing: dict[str, list[str]] = {}

    def saltenvs(self) -> list[str]:
        if self._envs is None:
            self._envs = list(self.source.saltenvs())
        return list(self._envs)

    def get(self, saltenv: str, relpath: str) -> SourceFile | None:
        key = (saltenv, relpath)
        found = self._files.get(key, _ABSENT)
        if found is _ABSENT:
            found = self._files[key] = self.source.get(saltenv, relpath)  # errors are not memoised
        return found  # type: ignore[return-value]

    def list_files(self, saltenv: str) -> list[str]:
        listing = self._listing.get(saltenv)
        if listing is None:
            listing = self._listing[saltenv] = list(self.source.list_files(saltenv))
        return list(listing)

    def fetch(self, saltenv: str, relpath: str) -> FetchedFile | None:
        return self.source.fetch(saltenv, relpath)
