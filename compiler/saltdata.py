"""Salt's data helpers, with Salt's exact semantics (salt.utils.data / salt.utils.dictupdate).

Execution functions (runtime/modules) and Jinja filters share them:

* ``traverse`` walks ``'a:b:0'`` through dicts and lists as Salt's ``traverse_dict_and_list``
  (a list of dicts is searched for the key; a missing key is retried as its YAML value,
  so ``'users:1000'`` finds the integer key ``1000``);
* ``update`` is ``dictupdate.update``: recursive and IN PLACE (formulas rely on
  ``{% do salt['defaults.merge'](a, b) %}`` changing ``a``), values shared, not copied;
* ``merge`` is ``dictupdate.merge`` (the strategies of ``slsutil.merge``);
* ``filter_by`` is ``salt.utils.data.filter_by`` (grains/pillar/match ``filter_by``).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

import yaml

from compiler.datacopy import deepcopy

DEFAULT_DELIM = ":"


class FilterByError(ValueError):
    """filter_by given values it cannot combine (Salt raises SaltException)."""


# A plain word YAML reads back as the same string (not a bool, null or number): no parse needed.
_PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_YAML_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null", "none", "nan", "inf"})


def yamlify(arg: Any) -> Any:
    """salt.utils.args.yamlify_arg: a string that reads as a YAML scalar becomes that value."""
    if not isinstance(arg, str):
        return arg
    if _PLAIN_WORD.match(arg) and arg.lower() not in _YAML_WORDS:
        return arg
    return _yamlify_text(arg)


@functools.lru_cache(maxsize=4096)
def _yamlify_scalar(arg: str) -> Any:
    """yamlify of a text that cannot give a mapping or a list (so the cached answer is immutable)."""
    return _yamlify_parse(arg)


def _yamlify_text(arg: str) -> Any:
    if arg.lstrip().startswith(("{", "[")) or "#" in arg:
        return _yamlify_parse(arg)
    return _yamlify_scalar(arg)


def _yamlify_parse(arg: str) -> Any:
    stripped = arg.strip()
    if stripped in ("", "---", "..."):
        return arg
    if "_" in arg and all(ch in "0123456789_" for ch in stripped):
        return arg
    if any(ch in arg for ch in "\t\r\n"):
        return arg
    try:
        if "#" in arg:
            parsed = yaml.safe_load(arg)
            return arg if isinstance(parsed, str) or parsed is None else parsed
        value = None if arg == "None" else yaml.safe_load(arg)
    except Exception:  # noqa: BLE001 - Salt returns the text for anything it cannot load
        return arg
    if isinstance(value, dict):
        return value if arg.startswith("{") else arg
    if isinstance(value, list):
        return value if arg.startswith("[") else arg
    if value is None or isinstance(value, (float, int, str)):
        if value == "" and arg in ("|", "!"):
            return arg
        if value is None and (stripped.startswith("#") or arg == "!"):
            return arg
        return value
    return arg


def traverse(data: Any, key: Any, default: Any = None, delimiter: str = DEFAULT_DELIM) -> Any:
    """salt.utils.data.traverse_dict_and_list."""
    ptr = data
    if isinstance(key, str):
        parts: list[Any] = key.split(delimiter)
    elif isinstance(key, int):
        parts = [key]
    else:
        parts = list(key)
    for each in parts:
        if isinstance(ptr, list):
            ptr, found = _step_list(ptr, each)
            if not found:
                return default
            continue
        try:
            ptr = ptr[each]
        except KeyError:
            loaded = yamlify(each)
            if loaded == each:
                return default
            try:
                ptr = ptr[loaded]
            except (KeyError, TypeError, IndexError):
                return default
        except (TypeError, IndexError):
            return default
    return ptr


def _step_list(ptr: list[Any], each: Any) -> tuple[Any, bool]:
    try:
        idx = int(each)
    except (TypeError, ValueError):
        for embedded in ptr:
            if isinstance(embedded, dict) and each in embedded:
                return embedded[each], True
        return ptr, False
    for embedded in ptr:
        if isinstance(embedded, dict) and idx in embedded:
            return embedded[idx], True
    try:
        return ptr[idx], True
    except IndexError:
        return ptr, False


def update(dest: MutableMapping[Any, Any], upd: Mapping[Any, Any], recursive_update: bool = True, merge_lists: bool = False) -> Any:
    """salt.utils.dictupdate.update: merge upd into dest, in place; returns dest."""
    if not isinstance(dest, Mapping) or not isinstance(upd, Mapping):
        raise TypeError("Cannot update using non-dict types in dictupdate.update()")
    keys = list(upd.keys())
    if not set(dest.keys()) & set(keys):
        recursive_update = False
    if not recursive_update:
        for key in upd:
            dest[key] = upd[key]
        return dest
    for key in keys:
        val = upd[key]
        sub = dest.get(key, None)
        if isinstance(sub, Mapping) and isinstance(val, Mapping):
            dest[key] = update(sub, val, merge_lists=merge_lists)  # type: ignore[arg-type]
        elif isinstance(sub, list) and isinstance(val, list):
            if merge_lists:
                merged = deepcopy(sub)
                merged.extend(x for x in val if x not in merged)
                dest[key] = merged
            else:
                dest[key] = val
        else:
            dest[key] = val
    return dest


def merge(obj_a: MutableMapping[Any, Any], obj_b: Mapping[Any, Any], strategy: str = "smart", renderer: str = "yaml",
          merge_lists: bool = False) -> Any:
    """salt.utils.dictupdate.merge: smart, recurse, aggregate, overwrite, list or none."""
    if strategy == "smart":
        last = renderer.split("|")[-1]
        strategy = "aggregate" if last == "yamlex" or renderer.startswith("yamlex_") else "recurse"
    if strategy == "list":
        return {key: [val, obj_b[key]] if key in obj_b else val for key, val in obj_a.items()}
    if strategy in ("recurse", "none"):
        return update(deepcopy(obj_a), obj_b, merge_lists=merge_lists and strategy == "recurse")
    if strategy == "aggregate":
        # yamlex aggregation of unmarked data: the top level merges, below it obj_b's values win
        out = dict(obj_a)
        out.update(obj_b)
        return out
    if strategy == "overwrite":
        for key in obj_b:
            if key in obj_a:
                obj_a[key] = obj_b[key]
        return update(deepcopy(obj_a), obj_b, merge_lists=merge_lists)
    return update(deepcopy(obj_a), obj_b)  # Salt logs "Unknown merging strategy" and recurses


def filter_by(lookup_dict: Mapping[Any, Any], lookup: str, data: Any, merge: Any = None, default: Any = "default",
              base: Any = None) -> Any:
    """salt.utils.data.filter_by: the lookup_dict entry whose key (a glob) matches the value at
    ``lookup`` in data (each item, for a list value); else the ``default`` entry; ``base``
    merged under it; ``merge`` merged over it (in place, as Salt)."""
    ret = None
    val = traverse(data, lookup, [])
    for each in val if isinstance(val, list) else [val]:
        for key in lookup_dict:
            if fnmatch.fnmatchcase(each if isinstance(each, str) else str(each),
                                   key if isinstance(key, str) else str(key)):
                ret = lookup_dict[key]
                break
        if ret is not None:
            break
    if ret is None:
        ret = lookup_dict.get(default, None)
    if base and base in lookup_dict:
        base_values = lookup_dict[base]
        if ret is None:
            ret = base_values
        elif isinstance(base_values, Mapping):
            if not isinstance(ret, Mapping):
                raise FilterByError("filter_by default and look-up values must both be dictionaries.")
            ret = update(deepcopy(base_values), ret)
    if merge:
        if not isinstance(merge, Mapping):
            raise FilterByError("filter_by merge argument must be a dictionary.")
        if ret is None:
            ret = merge
        else:
            update(ret, deepcopy(merge))
    return ret
