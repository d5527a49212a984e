"""defaults: merge defaults with overrides (merge, update, deepcopy) and a formula's defaults file (get)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from compiler import saltdata
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


@pure
def merge(env: ModuleEnv, dest: Any, src: Any, merge_lists: bool = False, in_place: bool = True,
          convert_none: bool = True) -> Any:
    """Merge src into dest recursively; in place unless in_place=False (then a merged copy)."""
    src = {} if src is None and convert_none else src
    if dest is None and convert_none:
        if in_place:
            raise TypeError("Can't perform in-place merge into NoneType")
        dest = {}
    merged = dest if in_place else copy.deepcopy(dest)
    return saltdata.update(merged, src, merge_lists=merge_lists)


@pure
def deepcopy(env: ModuleEnv, source: Any) -> Any:
    """A deep copy of source."""
    return copy.deepcopy(source)


@pure
def update(env: ModuleEnv, dest: Any, defaults: Any, merge_lists: bool = True, in_place: bool = True,
           convert_none: bool = True) -> Any:
    """Give every value of dest (a dict of nodes) the defaults it lacks: each node becomes
    defaults merged with the node."""
    if in_place:
        if dest is None:
            raise TypeError("Can't perform in-place update into NoneType")
        nodes = dest
    else:
        dest = {} if dest is None and convert_none else dest
        nodes = copy.deepcopy(dest)
    defaults = {} if defaults is None and convert_none else defaults
    for node_name, node_vars in nodes.items():
        nodes[node_name] = merge(env, copy.deepcopy(defaults), node_vars, merge_lists=merge_lists,
                                 convert_none=convert_none)
    return nodes


@pure
def get(env: ModuleEnv, key: str, default: Any = "") -> Any:
    """A value from <formula>/defaults.yaml (or .json) of the state tree: 'formula:a:b'."""
    namespace, _, sub = key.partition(":")
    data = _load(env, namespace)
    if sub:
        return saltdata.traverse(data, sub, default)
    return data


def _load(env: ModuleEnv, formula: str) -> Any:
    source = env.state_source
    if source is None:
        return None
    import json

    import yaml

    saltenv = env.opts.get("saltenv") or "base"
    for ext, loader in (("yaml", yaml.safe_load), ("json", json.loads)):
        found = source.get(saltenv, f"{formula}/defaults.{ext}")
        if found is not None:
            return loader(found.text) or {}
    return None
