"""The ``salt`` object templates see: ``salt['grains.get'](...)`` and ``salt.grains.get(...)``.

The compiler owns no execution functions: its caller (runtime/pipeline.py, the
master's pillar service, a minion) hands it a ``FunctionsFactory``, which
gives, for one render target (minion id, grains, pillar, opts), a mapping of
``'mod.fun'`` names to callables.  The runtime derives that mapping from its
one registry of execution functions (runtime/modules).

``SaltFunctions`` wraps the mapping with Salt's template semantics:

* ``salt['mod.fun']`` and ``salt.mod.fun`` (and ``salt['mod'].fun``) both work;
* a function the mapping does not have is *undefined* in Jinja, as in Salt
  (``salt['x.y'] is defined`` is false, ``| default(none)`` works) and calling
  it is an error saying why (see ``missing_reason``);
* ``cmd.run`` is ``cmd.shell`` in templates (Salt's AliasedLoader).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

# Salt's AliasedLoader: templates calling cmd.run get cmd.shell (python_shell=True by default)
TEMPLATE_ALIASES = {"cmd.run": "cmd.shell"}


class FunctionMap(Protocol):
    """What a FunctionsFactory returns: 'mod.fun' -> callable, looked up lazily."""

    def __getitem__(self, name: str) -> Callable[..., Any]: ...

    def __contains__(self, name: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def __len__(self) -> int: ...

    def modules(self) -> set[str]:
        """Module names that have at least one function here."""
        ...

    def missing_reason(self, name: str) -> str:
        """Why name is not in the map (no such function, or not callable in this mode)."""
        ...


class FunctionsFactory(Protocol):
    def __call__(self, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                 opts: Mapping[str, Any]) -> FunctionMap: ...


class EmptyFunctions:
    """No execution functions at all (a compiler built without a factory)."""

    def __getitem__(self, name: str) -> Callable[..., Any]:
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def modules(self) -> set[str]:
        return set()

    def missing_reason(self, name: str) -> str:
        return "this compiler was built without execution functions"


def no_functions(minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                 opts: Mapping[str, Any]) -> FunctionMap:
    return EmptyFunctions()


class SaltFunctions(Mapping[str, Any]):
    """The ``salt`` variable of a template."""

    def __init__(self, functions: FunctionMap):
        self._functions = functions

    def __getitem__(self, name: Any) -> Any:
        if not isinstance(name, str):
            raise KeyError(name)
        if "." in name:
            return self._functions[TEMPLATE_ALIASES.get(name, name)]
        if name in self._functions.modules():
            return ModuleFunctions(self, name)
        raise KeyError(name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if "." in name:
            return TEMPLATE_ALIASES.get(name, name) in self._functions
        return name in self._functions.modules()

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def __repr__(self) -> str:
        return f"<salt functions: {len(self)}>"

    def missing_reason(self, name: str) -> str:
        return self._functions.missing_reason(TEMPLATE_ALIASES.get(name, name))


class ModuleFunctions:
    """``salt['config']`` / ``salt.config``: the functions of one module as attributes."""

    def __init__(self, table: SaltFunctions, module: str):
        self._table = table
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._table[f"{self._module}.{name}"]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self._table[f"{self._module}.{name}"]

    def __repr__(self) -> str:
        return f"<salt module '{self._module}'>"

    def missing_reason(self, name: str) -> str:
        return self._table.missing_reason(f"{self._module}.{name}")

    def full_name(self, name: str) -> str:
        return f"{self._module}.{name}"


def undefined_hint(obj: Any, name: Any) -> str | None:
    """The message for a missing ``salt`` function, or None when obj is not a salt table."""
    if isinstance(obj, SaltFunctions) and isinstance(name, str):
        full = name
        reason = obj.missing_reason(name) if "." in name else f"there is no execution module '{name}'"
    elif isinstance(obj, ModuleFunctions) and isinstance(name, str):
        full = obj.full_name(name)
        reason = obj.missing_reason(name)
    else:
        return None
    return f"salt['{full}'] is undefined: {reason}"
