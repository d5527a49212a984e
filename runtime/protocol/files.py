"""The master's file server (``salt://``), asked by minions through their sessions.

Paths are relative to a root of one saltenv; the master resolves them beneath the roots of its
``fileserver_backend`` only (``runtime.master.fileserver``: file_roots, gitfs remotes' mountpoint
and root; no ``..``, absolute paths, backslashes, NUL, symlinks out of the root; SECURITY.md class 4).  Here: the shape of each request and reply.  A file that does not
exist is answered with an empty map (every field of the reply absent).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Self

from runtime.protocol.base import (
    OMIT_NONE,
    ProtocolError,
    Reply,
    binary,
    boolean,
    integer,
    mapping,
    optional_text,
    text,
    texts,
)
from runtime.protocol.session import SessionRequest

_PATH_RULES = ("paths resolved beneath the roots of `fileserver_backend` only (file_roots; a gitfs remote's "
               "mountpoint and root): no `..`, absolute paths, backslashes, NUL, symlinks out "
               "of the root, `..`/`/` in saltenv, non-string saltenv (class 4); a refusal is "
               "`access_denied`/`bad_saltenv` naming no master path")


def _saltenv(load: dict[Any, Any]) -> str | None:
    return optional_text(load, "saltenv", reason="bad_saltenv")


def _path(load: dict[Any, Any]) -> str:
    return text(load, "path", reason="bad_path", max_len=4096)


def _prefix(load: dict[Any, Any]) -> str:
    prefix = load.get("prefix")
    return prefix if isinstance(prefix, str) else ""   # Salt's file lists ignore a prefix they cannot use


@dataclasses.dataclass(frozen=True)
class FileEnvsReply(Reply):
    envs: list[str]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(envs=texts(mapping(load, "a file_envs reply"), "envs"))


@dataclasses.dataclass(frozen=True)
class FileEnvs(SessionRequest[FileEnvsReply]):
    """The saltenvs of the file server: the union of its backends' (``file_roots``, gitfs branches and tags)."""

    COMMAND: ClassVar[str] = "_file_envs"
    REPLY: ClassVar[type[Reply]] = FileEnvsReply

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        mapping(load)
        return cls()


@dataclasses.dataclass(frozen=True)
class FileListReply(Reply):
    files: list[str]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(files=texts(mapping(load, "a file_list reply"), "files"))


@dataclasses.dataclass(frozen=True)
class FileList(SessionRequest[FileListReply]):
    """The files of a saltenv under ``prefix``."""

    COMMAND: ClassVar[str] = "_file_list"
    REPLY: ClassVar[type[Reply]] = FileListReply
    NOTES: ClassVar[str] = "a symlink out of the root is never listed; a prefix that is not a string is ignored"

    saltenv: str | None
    prefix: str = ""

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(saltenv=_saltenv(load), prefix=_prefix(load))


@dataclasses.dataclass(frozen=True)
class DirListReply(Reply):
    dirs: list[str]

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        return cls(dirs=texts(mapping(load, "a dir_list reply"), "dirs"))


@dataclasses.dataclass(frozen=True)
class DirList(SessionRequest[DirListReply]):
    """The directories of a saltenv under ``prefix``."""

    COMMAND: ClassVar[str] = "_dir_list"
    REPLY: ClassVar[type[Reply]] = DirListReply
    NOTES: ClassVar[str] = "the directories holding the files `_file_list` lists"

    saltenv: str | None
    prefix: str = ""

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(saltenv=_saltenv(load), prefix=_prefix(load))


@dataclasses.dataclass(frozen=True)
class FileFindReply(Reply):
    """Where a file is and its hash; every field None (``{}``) when there is no such file."""

    path: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    saltenv: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    hsum: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    hash_type: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    size: int | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    mode: int | None = dataclasses.field(default=None, metadata=OMIT_NONE)

    @property
    def found(self) -> bool:
        return self.hsum is not None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a file_find reply")
        if not load:
            return cls()
        return cls(path=text(load, "path"), saltenv=text(load, "saltenv"), hsum=text(load, "hsum"),
                   hash_type=text(load, "hash_type"), size=integer(load, "size"), mode=integer(load, "mode"))


@dataclasses.dataclass(frozen=True)
class FileFind(SessionRequest[FileFindReply]):
    """Whether a file exists, and its hash (the minion's file cache keeps a copy while it matches)."""

    COMMAND: ClassVar[str] = "_file_find"
    REPLY: ClassVar[type[Reply]] = FileFindReply
    NOTES: ClassVar[str] = _PATH_RULES

    path: str
    saltenv: str | None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(saltenv=_saltenv(load), path=_path(load))


@dataclasses.dataclass(frozen=True)
class FileHashReply(Reply):
    hsum: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    hash_type: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a file_hash reply")
        if not load:
            return cls()
        return cls(hsum=text(load, "hsum"), hash_type=text(load, "hash_type"))


@dataclasses.dataclass(frozen=True)
class FileHash(SessionRequest[FileHashReply]):
    """A file's hash."""

    COMMAND: ClassVar[str] = "_file_hash"
    REPLY: ClassVar[type[Reply]] = FileHashReply
    NOTES: ClassVar[str] = "the same path rules as `_file_find`"

    path: str
    saltenv: str | None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        return cls(saltenv=_saltenv(load), path=_path(load))


@dataclasses.dataclass(frozen=True)
class FileChunk(Reply):
    """One chunk (1 MiB) of a file from ``loc``; every field None (``{}``) when there is no such file."""

    data: bytes | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    dest: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    loc: int | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    done: bool | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    hsum: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    hash_type: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    mode: int | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    size: int | None = dataclasses.field(default=None, metadata=OMIT_NONE)

    @property
    def found(self) -> bool:
        return self.data is not None

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load, "a file chunk")
        if not load:
            return cls()
        return cls(data=binary(load, "data"), dest=text(load, "dest"), loc=integer(load, "loc", minimum=0),
                   done=boolean(load, "done"), hsum=text(load, "hsum"), hash_type=text(load, "hash_type"),
                   mode=integer(load, "mode"), size=integer(load, "size", minimum=0))


@dataclasses.dataclass(frozen=True)
class ServeFile(SessionRequest[FileChunk]):
    """A chunk of a file."""

    COMMAND: ClassVar[str] = "_serve_file"
    REPLY: ClassVar[type[Reply]] = FileChunk
    NOTES: ClassVar[str] = ("the same path rules as `_file_find`; `loc` must be an offset within the file (`bad_path`); "
                            "each request opens its file once, component by component from its root without letting "
                            "the kernel follow a symlink (`compiler/beneath.py`), and reads chunk, hash, size and mode "
                            "from that descriptor, so a symlink swapped mid-request cannot serve a file from outside")

    path: str
    saltenv: str | None
    loc: int = 0

    @classmethod
    def from_wire(cls, load: Any) -> Self:
        load = mapping(load)
        saltenv, path, loc = _saltenv(load), _path(load), load.get("loc", 0)
        if not isinstance(loc, int) or isinstance(loc, bool) or loc < 0:
            raise ProtocolError("bad_path", "loc must be an offset within the file")
        return cls(saltenv=saltenv, path=path, loc=loc)
