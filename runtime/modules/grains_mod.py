"""grains: read the minion's grains (get, item, items, ls, filter_by, has_value, equals, fetch) and
set its own (setval, setvals, set, append, remove, delval, delkey: the minion's grains file, Salt's
``<config dir>/grains`` or ``grains_file``)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from compiler import saltdata
from runtime.modules.registry import pure, runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

_MISSING = object()


@pure
def get(env: ModuleEnv, key: str, default: Any = "", delimiter: str = ":", ordered: bool = True) -> Any:
    """A grain by key; nested keys separated by delimiter (':'), list items by index."""
    grains = env.grains if ordered is True else json.loads(json.dumps(env.grains, default=str))
    return saltdata.traverse(grains, key, default, delimiter)


@pure
def fetch(env: ModuleEnv, key: str, default: Any = "", delimiter: str = ":", ordered: bool = True) -> Any:
    """Same as grains.get."""
    return get(env, key, default, delimiter, ordered)


@pure
def item(env: ModuleEnv, *args: str, **kwargs: Any) -> dict[str, Any]:
    """{key: value} for each key given (default=, delimiter= as grains.get)."""
    default = kwargs.get("default", "")
    delimiter = kwargs.get("delimiter", ":")
    return {key: saltdata.traverse(env.grains, key, default, delimiter) for key in args}


@pure
def items(env: ModuleEnv, sanitize: bool = False) -> dict[str, Any]:
    """All grains."""
    return dict(env.grains)


@pure
def ls(env: ModuleEnv) -> list[str]:
    """Grain names, sorted."""
    return sorted(env.grains)


@pure
def has_value(env: ModuleEnv, key: str) -> bool:
    """True when the grain exists (nested keys separated by ':'), whatever its value."""
    return saltdata.traverse(env.grains, key, _MISSING) is not _MISSING


@pure
def equals(env: ModuleEnv, key: str, value: Any) -> bool:
    """True when str(grain) == str(value)."""
    return str(value) == str(get(env, key))


@pure
def filter_by(env: ModuleEnv, lookup_dict: dict, grain: str = "os_family", merge: dict | None = None,
              default: str = "default", base: str | None = None) -> Any:
    """The lookup_dict entry whose key (a glob) matches the grain's value; else the `default`
    entry; `base` merged under it and `merge` over it."""
    return saltdata.filter_by(lookup_dict, grain, env.grains, merge, default, base)


# -- the minion's own grains (the grains file) ---------------------------------------------------


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


@runs_command()
def setvals(env: ModuleEnv, grains: Any, destructive: bool = False, refresh_pillar: bool = True) -> Any:
    """Set grains in this minion's grains file (and in memory); a None value with destructive=True
    removes the grain.  The minion then re-reads its grains (sending them to its master) and, with
    refresh_pillar, its pillar.  Returns the grains given."""
    import yaml

    from runtime.grains import grains_file

    if not isinstance(grains, dict):
        raise _error("setvals grains must be a dictionary.")
    path = grains_file(env.opts)
    if not path:
        raise _error("This minion has no grains file: set grains_file (or run it with a config file)")
    stored: Any = {}
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                stored = yaml.safe_load(fh) or {}
        except (OSError, yaml.YAMLError) as exc:
            return f"Unable to read existing grains file: {exc}"
    if not isinstance(stored, dict):
        stored = {}
    for key, val in grains.items():
        if val is None and _truthy(destructive):
            stored.pop(key, None)
            env.grains.pop(key, None)
        else:
            stored[key] = val
            env.grains[key] = val
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.part"
    with open(tmp, "w", encoding="utf-8") as fh:
        yaml.safe_dump(stored, fh, default_flow_style=False)
    os.replace(tmp, path)
    if env.refresh_grains is not None:
        env.refresh_grains()
    if _truthy(refresh_pillar) and env.refresh_pillar is not None:
        env.refresh_pillar(wait=True)
    return grains


@runs_command()
def setval(env: ModuleEnv, key: str, val: Any, destructive: bool = False, refresh_pillar: bool = True) -> Any:
    """Set one grain in this minion's grains file: {key: val}."""
    return setvals(env, {key: val}, destructive, refresh_pillar)


@runs_command(name="append")
def append_(env: ModuleEnv, key: str, val: Any, convert: bool = False, delimiter: str = ":") -> Any:
    """Add val (or each item of a list) to the list grain key (nested keys with delimiter);
    convert=True makes a scalar grain a list first."""
    current = saltdata.traverse(env.grains, key, [], delimiter)
    if _truthy(convert) and not isinstance(current, list):
        current = [] if current is None else [current]
    if not isinstance(current, list):
        return f"The key {key} is not a valid list"
    if val in current:
        return f"The val {val} was already in the list {key}"
    current = [*current, *(val if isinstance(val, list) else [val])]
    return setval(env, *_nested(env, key, current, delimiter))


@runs_command()
def remove(env: ModuleEnv, key: str, val: Any, delimiter: str = ":") -> Any:
    """Remove val from the list grain key."""
    current = saltdata.traverse(env.grains, key, [], delimiter)
    if not isinstance(current, list):
        return f"The key {key} is not a valid list"
    if val not in current:
        return f"The val {val} was not in the list {key}"
    return setval(env, *_nested(env, key, [item for item in current if item != val], delimiter))


def _nested(env: ModuleEnv, key: str, value: Any, delimiter: str) -> tuple[str, Any]:
    """(top-level key, its new value) for a change of the nested grain key."""
    while delimiter in key:
        key, rest = key.rsplit(delimiter, 1)
        parent = saltdata.traverse(env.grains, key, {}, delimiter)
        if isinstance(parent, dict):
            parent = {**parent, rest: value}
        value = parent
    return key, value


def _kind(value: Any) -> str | None:
    if value is _MISSING:
        return None
    return "complex" if isinstance(value, (dict, list)) else "simple"


@runs_command(name="set")
def set_(env: ModuleEnv, key: str, val: Any = "", force: bool = False, destructive: bool = False,
         delimiter: str = ":") -> dict[str, Any]:
    """Set the grain key (nested keys with delimiter) in the grains file.  Conservative, as Salt's:
    an existing dict or list, or a dict or list given over an existing value, is replaced only
    with force=True; val None with destructive=True removes the key."""
    import copy

    ret: dict[str, Any] = {"comment": "", "changes": {}, "result": True}
    force, destructive = _truthy(force), _truthy(destructive)
    existing = copy.deepcopy(saltdata.traverse(env.grains, key, _MISSING, delimiter))
    if existing is not _MISSING and existing == val and (val is not None or not destructive):
        ret["comment"] = "Grain is already set"
        return ret
    if existing is not None and not force:
        if _kind(existing) == "complex":
            return {**ret, "result": False,
                    "comment": f"The key '{key}' exists but is a dict or a list. Use 'force=True' to overwrite."}
        if _kind(val) == "complex" and existing is not _MISSING:
            return {**ret, "result": False, "comment": f"The key '{key}' exists and the given value is a dict "
                                                       "or a list. Use 'force=True' to overwrite."}
    value = val
    while delimiter in key:
        key, rest = key.rsplit(delimiter, 1)
        parent = copy.deepcopy(saltdata.traverse(env.grains, key, {}, delimiter))
        if isinstance(parent, dict):
            if value is None and destructive:
                parent.pop(rest, None)
            else:
                parent[rest] = value
        elif isinstance(parent, list):
            updated = False
            for index, entry in enumerate(parent):
                if entry == rest:
                    parent[index] = {rest: value}
                    updated = True
                elif isinstance(entry, dict) and rest in entry:
                    entry[rest] = value
                    updated = True
            if not updated:
                parent.append({rest: value})
        elif parent == rest or force:
            parent = {rest: value}
        else:
            return {**ret, "result": False, "comment": f"The key '{key}' value is '{parent}', which is different "
                                                       f"from the provided key '{rest}'. Use 'force=True' to overwrite."}
        value = parent
    stored = setval(env, key, value, destructive=destructive)
    if isinstance(stored, dict):
        ret["changes"] = stored
    else:
        ret.update(comment=stored, result=False)
    return ret


@runs_command()
def delval(env: ModuleEnv, key: str, destructive: bool = False, force: bool = False) -> dict[str, Any]:
    """Set the grain to None in the grains file (destructive=True: remove it); a dict or list
    grain only with force=True (grains.set with val None)."""
    return set_(env, key, None, force=force, destructive=destructive)


@runs_command()
def delkey(env: ModuleEnv, key: str, force: bool = False) -> dict[str, Any]:
    """Remove the grain from the grains file."""
    return delval(env, key, destructive=True, force=force)
