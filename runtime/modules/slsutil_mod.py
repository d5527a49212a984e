"""slsutil: helpers for sls files (merge, update, serialize, file_exists in the state tree, banner ...)."""

from __future__ import annotations

import os
import posixpath
import textwrap
from typing import TYPE_CHECKING, Any

from compiler import saltdata
from runtime.modules import _serializers
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


@pure
def update(env: ModuleEnv, dest: Any, upd: Any, recursive_update: bool = True, merge_lists: bool = False) -> Any:
    """Merge upd into dest, in place (recursively unless recursive_update=False); returns dest."""
    return saltdata.update(dest, upd, recursive_update, merge_lists)


@pure
def merge(env: ModuleEnv, obj_a: Any, obj_b: Any, strategy: str = "smart", renderer: str = "yaml",
          merge_lists: bool = False) -> Any:
    """Merge obj_b into a copy of obj_a with a Salt merge strategy (smart, recurse, aggregate,
    overwrite, list, none)."""
    return saltdata.merge(obj_a, obj_b, strategy, renderer, merge_lists)


@pure
def merge_all(env: ModuleEnv, lst: list, strategy: str = "smart", renderer: str = "yaml", merge_lists: bool = False) -> Any:
    """Merge every dict of lst in turn."""
    ret: Any = {}
    for obj in lst:
        ret = saltdata.merge(ret, obj, strategy, renderer, merge_lists)
    return ret


def _kwargs(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if not k.startswith("__")}


@pure
def serialize(env: ModuleEnv, serializer: str, obj: Any, **mod_kwargs: Any) -> Any:
    """obj serialized by one of Salt's serializers (yaml, json, configparser, msgpack, yamlex)."""
    try:
        fn = _serializers.get(serializer, "serialize")
    except _serializers.SerializerNotFound as exc:
        raise _error(str(exc)) from None
    return fn(obj, **_kwargs(mod_kwargs))


@pure
def deserialize(env: ModuleEnv, serializer: str, stream_or_string: Any, **mod_kwargs: Any) -> Any:
    """Data read from text by one of Salt's serializers."""
    try:
        fn = _serializers.get(serializer, "deserialize")
    except _serializers.SerializerNotFound as exc:
        raise _error(str(exc)) from None
    return fn(stream_or_string, **_kwargs(mod_kwargs))


@pure
def boolstr(env: ModuleEnv, value: Any, true: str = "true", false: str = "false") -> str:
    """`true` when value is truthy, else `false`."""
    return true if value else false


@pure
def banner(env: ModuleEnv, width: int = 72, commentchar: str = "#", borderchar: str = "#", blockstart: str | None = None,
           blockend: str | None = None, title: str | None = None, text: str | None = None,
           newline: bool = False) -> str:
    """A comment block saying the file is managed by Salt."""
    if title is None:
        title = "THIS FILE IS MANAGED BY SALT - DO NOT EDIT"
    if text is None:
        text = ("The contents of this file are managed by Salt. Any changes to this file may be overwritten "
                "automatically and without warning.")
    ledge = commentchar.rstrip()
    redge = commentchar.strip()
    lgutter = ledge + " "
    rgutter = " " + redge
    textwidth = width - len(lgutter) - len(rgutter)
    if textwidth <= 0:
        raise _error("Width is too small to render banner")
    border = commentchar + borderchar[:1] * (width - len(ledge) - len(redge)) + redge
    spacer = commentchar + " " * (width - len(commentchar) * 2) + commentchar
    wrapper = textwrap.TextWrapper(width=textwidth)
    block = [] if blockstart is None else [blockstart]
    block += [border, spacer]
    block += [lgutter + line.center(textwidth) + rgutter for line in wrapper.wrap(title)]
    block.append(spacer)
    block += [lgutter + line + " " * (textwidth - len(line)) + rgutter for line in wrapper.wrap(text)]
    block.append(border)
    if blockend is not None:
        block.append(blockend)
    result = os.linesep.join(block)
    return result + os.linesep if newline else result


def _files(env: ModuleEnv, saltenv: str) -> list[str]:
    source = env.state_source
    if source is None or saltenv not in source.saltenvs():
        return []
    return source.list_files(saltenv)


def _dirs(env: ModuleEnv, saltenv: str) -> set[str]:
    out: set[str] = set()
    for path in _files(env, saltenv):
        parent = posixpath.dirname(path)
        while parent and parent not in out:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return out


@pure
def file_exists(env: ModuleEnv, path: str, saltenv: str = "base") -> bool:
    """True when path is a file of the state tree (salt://path)."""
    return path in set(_files(env, saltenv))


@pure
def dir_exists(env: ModuleEnv, path: str, saltenv: str = "base") -> bool:
    """True when path is a directory of the state tree."""
    return path in _dirs(env, saltenv)


@pure
def path_exists(env: ModuleEnv, path: str, saltenv: str = "base") -> bool:
    """True when path is a file or a directory of the state tree."""
    return file_exists(env, path, saltenv) or dir_exists(env, path, saltenv)


@pure
def findup(env: ModuleEnv, startpath: str, filenames: Any, saltenv: str = "base") -> str:
    """The first of filenames found in startpath or one of its parents (in the state tree)."""
    if startpath:
        startpath = posixpath.normpath(startpath)
    if startpath and not path_exists(env, startpath, saltenv):
        raise _error(f"Starting path not found in the state tree: {startpath}")
    if isinstance(filenames, str):
        filenames = [filenames]
    if not isinstance(filenames, list):
        raise _error("Filenames argument must be a string or list of strings")
    while True:
        for filename in filenames:
            fullname = posixpath.join(startpath or "", filename)
            if path_exists(env, fullname, saltenv):
                return fullname
        if not startpath:
            raise _error("File pattern(s) not found in path ancestry")
        startpath = os.path.dirname(startpath)
