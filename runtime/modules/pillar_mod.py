"""pillar: the in-memory pillar (get, item, raw, keys, ls, filter_by) and fresh compiles (items)."""

from __future__ import annotations

import copy
import logging
import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from compiler import merge as merge_mod
from compiler import saltdata
from runtime.config import option
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.pillar")

class _NotSet:
    """Salt's NOT_SET: no default given ('' then, or an error with pillar_raise_on_missing)."""

    def __repr__(self) -> str:
        return "NOT_SET"


_NOT_SET = _NotSet()


@pure
def get(env: ModuleEnv, key: str, default: Any = _NOT_SET, merge: bool = False, merge_nested_lists: bool | None = None,
        delimiter: str = ":", pillarenv: str | None = None, saltenv: str | None = None,
        unmask: bool | None = None) -> Any:
    """A pillar value; nested keys separated by delimiter (':').  merge=True merges a dict (or
    list) default with the value found.  A missing key gives default ('' when not given, or an
    error with pillar_raise_on_missing)."""
    if default is _NOT_SET:
        default = KeyError if option(env.opts, "pillar_raise_on_missing", bool) else ""
    merge_lists = option(env.opts, "pillar_merge_lists", bool) if merge_nested_lists is None else merge_nested_lists
    data = env.pillar if pillarenv is None and saltenv is None else items(env, pillarenv=pillarenv, saltenv=saltenv)
    if merge:
        if isinstance(default, dict):
            found = saltdata.traverse(data, key, {}, delimiter)
            if isinstance(found, Mapping):
                return saltdata.update(copy.deepcopy(default), found, merge_lists=merge_lists)
            log.error("pillar.get: Default (%s) is a dict, but the returned pillar value (%s) is of type '%s'. "
                      "Merge will be skipped.", default, found, type(found).__name__)
        elif isinstance(default, list):
            found = saltdata.traverse(data, key, [], delimiter)
            if isinstance(found, list):
                out = copy.deepcopy(default)
                out.extend(x for x in found if x not in out)
                return out
            log.error("pillar.get: Default (%s) is a list, but the returned pillar value (%s) is of type '%s'. "
                      "Merge will be skipped.", default, found, type(found).__name__)
        else:
            log.error("pillar.get: Default (%s) is of type '%s', must be a dict or list to merge. "
                      "Merge will be skipped.", default, type(default).__name__)
    value = saltdata.traverse(data, key, default, delimiter)
    if value is KeyError:
        raise KeyError(f"Pillar key not found: {key}")
    return value


@pure
def fetch(env: ModuleEnv, key: str, default: Any = _NOT_SET, merge: bool = False, merge_nested_lists: bool | None = None,
          delimiter: str = ":", pillarenv: str | None = None, saltenv: str | None = None,
          unmask: bool | None = None) -> Any:
    """Same as pillar.get."""
    return get(env, key, default, merge, merge_nested_lists, delimiter, pillarenv, saltenv, unmask)


@pure
def items(env: ModuleEnv, *args: Any, pillar: dict | None = None, pillar_enc: str | None = None,
          pillarenv: str | None = None, saltenv: str | None = None, unmask: bool | None = None) -> Any:
    """A freshly compiled pillar (the in-memory pillar is left as it is); with key arguments,
    pillar.item of them.  While rendering a pillar or state tree offline: the pillar being used."""
    if args:
        return item(env, *args, pillarenv=pillarenv, saltenv=saltenv)
    if env.fresh_pillar is None:
        data = dict(env.pillar)
    else:
        data, _errors = env.fresh_pillar()
    if pillar:
        data = merge_mod.merge(data, pillar)
    return data


@pure
def data(env: ModuleEnv, *args: Any, pillar: dict | None = None, pillar_enc: str | None = None,
         pillarenv: str | None = None, saltenv: str | None = None, unmask: bool | None = None) -> Any:
    """Same as pillar.items."""
    return items(env, *args, pillar=pillar, pillar_enc=pillar_enc, pillarenv=pillarenv, saltenv=saltenv)


@pure
def item(env: ModuleEnv, *args: str, default: Any = None, delimiter: str | None = None, pillarenv: str | None = None,
         saltenv: str | None = None, unmask: bool | None = None) -> dict[str, Any]:
    """{key: value} for each key given (default '' when missing)."""
    default = "" if default is None else default
    delimiter = delimiter or ":"
    source = env.pillar if pillarenv is None and saltenv is None else items(env, pillarenv=pillarenv, saltenv=saltenv)
    return {key: saltdata.traverse(source, key, default, delimiter) for key in args}


@pure
def raw(env: ModuleEnv, key: str | None = None, unmask: bool | None = None) -> Any:
    """The in-memory pillar (or the top-level key of it, {} when missing)."""
    if key:
        return env.pillar.get(key, {})
    return dict(env.pillar)


@pure
def ls(env: ModuleEnv, *args: Any, pillar: dict | None = None, pillar_enc: str | None = None,
       pillarenv: str | None = None, saltenv: str | None = None, unmask: bool | None = None) -> list[str]:
    """Top-level keys of a fresh pillar (as pillar.items)."""
    return list(items(env, *args, pillar=pillar, pillarenv=pillarenv, saltenv=saltenv))


@pure
def keys(env: ModuleEnv, key: str, delimiter: str = ":", unmask: bool | None = None) -> list[str]:
    """Keys of the dict at key; an error when key is missing or not a dict."""
    value = saltdata.traverse(env.pillar, key, KeyError, delimiter)
    if value is KeyError:
        raise KeyError(f"Pillar key not found: {key}")
    if not isinstance(value, Mapping):
        raise ValueError(f"Pillar value in key {key} is not a dict")
    return list(value)


@pure
def obfuscate(env: ModuleEnv, *args: Any, pillar: dict | None = None, pillar_enc: str | None = None,
              pillarenv: str | None = None, saltenv: str | None = None, unmask: bool | None = None) -> Any:
    """A fresh pillar with every value replaced by its type name (keys kept)."""

    def hide(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: hide(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [hide(v) for v in value]
        return f"<{type(value).__name__}>"

    return hide(items(env, *args, pillar=pillar, pillarenv=pillarenv, saltenv=saltenv))


@pure
def filter_by(env: ModuleEnv, lookup_dict: dict, pillar: str, merge: dict | None = None, default: str = "default",
              base: str | None = None) -> Any:
    """As grains.filter_by, matching the value of the pillar key `pillar`."""
    return saltdata.filter_by(lookup_dict, pillar, env.pillar, merge, default, base)


@pure
def file_exists(env: ModuleEnv, path: str, saltenv: str | None = None) -> bool:
    """True when path is a file in the pillar roots (of saltenv, or of any environment)."""
    source = env.pillar_source
    if source is None:
        from runtime.modules import CommandError

        raise CommandError("No pillar_roots found. Are you running this on the master?")
    envs = source.saltenvs()
    if saltenv:
        if saltenv not in envs:
            return False
        envs = [saltenv]
    rel = posixpath.normpath(path.lstrip("/"))
    if rel.startswith(".."):
        return False
    return any(source.get(env_name, rel) is not None for env_name in envs)
