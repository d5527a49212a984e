"""Helpers shared by the state-module tests (files, modes, manifests)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from typing import Any


def manifest(root: str) -> list[tuple]:
    """Everything under ``root``: (path, kind, mode, content hash or link target)."""
    out = []
    for cur, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            full = os.path.join(cur, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "link", None, os.readlink(full)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "dir", oct(stat.S_IMODE(st.st_mode)), None))
            else:
                with open(full, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                out.append((rel, "file", oct(stat.S_IMODE(st.st_mode)), digest))
    return sorted(out)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write(path: str, text: str, mode: int = 0o644) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def mode_of(path: str) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def state_calls(high: dict[str, Any]) -> Iterator[tuple[str, str, str, str, dict[str, Any]]]:
    """Each (state id, module, function, name, kwargs) of a rendered sls without requisites, in
    file order: the argument list merged into one dict, ``name`` defaulting to the state id."""
    for state_id, body in high.items():
        for key, args in body.items():
            mod, fun = key.split(".")
            kwargs: dict[str, Any] = {}
            for item in args or []:
                kwargs.update(item)
            yield state_id, mod, fun, kwargs.pop("name", state_id), kwargs
