"""file: the read-only helpers formulas call from templates (file.file_exists, file.read ...)."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["file_exists", "directory_exists", "exists", "read", "basename", "dirname", "join", "get_hash",
           "is_link", "readlink"]


def file_exists(env: ModuleEnv, path: str) -> bool:
    """True when path is a regular file."""
    return os.path.isfile(os.path.expanduser(path))


def directory_exists(env: ModuleEnv, path: str) -> bool:
    """True when path is a directory."""
    return os.path.isdir(os.path.expanduser(path))


def exists(env: ModuleEnv, path: str) -> bool:
    """True when path exists (any type)."""
    return os.path.lexists(os.path.expanduser(path))


def read(env: ModuleEnv, path: str, binary: bool = False) -> str | bytes:
    """The contents of a file."""
    with open(os.path.expanduser(path), "rb" if binary else "r") as fh:
        return fh.read()


def basename(env: ModuleEnv, path: str) -> str:
    """os.path.basename."""
    return os.path.basename(path)


def dirname(env: ModuleEnv, path: str) -> str:
    """os.path.dirname."""
    return os.path.dirname(path)


def join(env: ModuleEnv, *parts: str) -> str:
    """os.path.join."""
    return os.path.join(*parts)


def get_hash(env: ModuleEnv, path: str, form: str = "sha256") -> str:
    """Hex digest of a file."""
    digest = hashlib.new(form)
    with open(os.path.expanduser(path), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_link(env: ModuleEnv, path: str) -> bool:
    """True when path is a symlink."""
    return os.path.islink(path)


def readlink(env: ModuleEnv, path: str) -> str:
    """The target of a symlink."""
    return os.readlink(path)
