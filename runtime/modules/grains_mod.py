"""grains: items, get, item, ls, filter_by."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler import match, salt_functions

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["items", "get", "item", "ls", "filter_by", "has_value"]

_MISSING = object()


def items(env: ModuleEnv) -> dict[str, Any]:
    """All grains."""
    return dict(env.grains)


def get(env: ModuleEnv, key: str, default: Any = "", delimiter: str = ":") -> Any:
    """A grain by key; nested keys separated by ':'."""
    value = match.traverse(env.grains, key, _MISSING, delimiter)
    return default if value is _MISSING else value


def item(env: ModuleEnv, *keys: str, default: Any = "", delimiter: str = ":") -> dict[str, Any]:
    """{key: value} for each key given."""
    return {k: get(env, k, default, delimiter) for k in keys}


def ls(env: ModuleEnv) -> list[str]:
    """Grain names."""
    return sorted(env.grains)


def has_value(env: ModuleEnv, key: str) -> bool:
    """True when the grain exists and is truthy."""
    return bool(match.traverse(env.grains, key, None))


def filter_by(env: ModuleEnv, lookup_dict: dict, grain: str = "os_family", merge: dict | None = None,
              default: str = "default", base: str | None = None) -> Any:
    """Pick the lookup_dict entry matching the grain's value."""
    return salt_functions.filter_by(lookup_dict, match.traverse(env.grains, grain, None), merge, default, base)
