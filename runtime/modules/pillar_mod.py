"""pillar: items (fresh compile), raw / get / item / ls (the in-memory pillar)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler import match, merge

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["items", "raw", "get", "item", "ls", "keys", "obfuscate"]

_MISSING = object()


def items(env: ModuleEnv, *args: Any, pillar: dict | None = None, **kwargs: Any) -> dict[str, Any]:
    """A freshly compiled pillar (the in-memory pillar is left as it is)."""
    if env.fresh_pillar is None:
        return dict(env.pillar)
    data, _errors = env.fresh_pillar()
    if pillar:
        data = merge.merge(data, pillar)
    return data


def raw(env: ModuleEnv, key: str | None = None) -> Any:
    """The in-memory pillar (or one key of it)."""
    if key is None:
        return dict(env.pillar)
    return env.pillar.get(key, {})


def get(env: ModuleEnv, key: str, default: Any = "", merge: bool = False, delimiter: str = ":", **_: Any) -> Any:
    """A value of the in-memory pillar; nested keys separated by ':'."""
    value = match.traverse(env.pillar, key, _MISSING, delimiter)
    if value is _MISSING:
        return default
    if merge and isinstance(value, dict) and isinstance(default, dict):
        from compiler import merge as merge_mod

        return merge_mod.merge(default, value)
    return value


def item(env: ModuleEnv, *keys: str, default: Any = "", delimiter: str = ":") -> dict[str, Any]:
    """{key: value} for each key given."""
    return {k: get(env, k, default, delimiter=delimiter) for k in keys}


def ls(env: ModuleEnv) -> list[str]:
    """Top-level pillar keys."""
    return sorted(env.pillar)


def keys(env: ModuleEnv, key: str, delimiter: str = ":") -> list[str]:
    """Keys under a pillar dict."""
    value = match.traverse(env.pillar, key, {}, delimiter)
    return list(value) if isinstance(value, dict) else []


def obfuscate(env: ModuleEnv) -> Any:
    """The pillar with every value replaced by its type name."""

    def hide(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: hide(v) for k, v in value.items()}
        if isinstance(value, list):
            return [hide(v) for v in value]
        return f"<{type(value).__name__}>"

    return hide(dict(env.pillar))
