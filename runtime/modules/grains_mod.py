"""grains: read the minion's grains (get, item, items, ls, filter_by, has_value, equals, fetch)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from compiler import saltdata
from runtime.modules.registry import pure

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
