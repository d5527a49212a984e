"""Salt's Jinja filters and tests (the commonly used ones), as pure functions."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import itertools
import json
import re
import shlex
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from markupsafe import Markup

from compiler import yamlload


def to_bool(val: Any) -> bool:
    if val is None:
        return False
    if isinstance(val, bool):
        return val
    if isinstance(val, (int, float)):
        return val > 0
    if isinstance(val, str):
        return val.lower() in ("yes", "1", "true")  # as Salt: 'on', 'y' and ' yes' are false
    if hasattr(val, "__len__"):
        return len(val) > 0
    return bool(val)


def sequence(val: Any) -> Any:
    """Wrap anything but a list, tuple, set or dict in a list (a dict stays a dict, as in Salt)."""
    if isinstance(val, (list, tuple, set, frozenset, Mapping)):
        return val
    return [val]


def unique(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for item in values:
        if item not in out:
            out.append(item)
    return out


def yaml_filter(value: Any, flow_style: bool = True) -> Markup:
    return Markup(yamlload.dump(_plain(value), flow_style=flow_style))


def json_filter(value: Any, sort_keys: bool = True, indent: int | None = None) -> Markup:
    return Markup(json.dumps(_plain(value), sort_keys=sort_keys, indent=indent))


def tojson(value: Any, indent: int | None = None) -> Markup:
    return Markup(json.dumps(_plain(value), indent=indent, ensure_ascii=True))


def yaml_encode(value: Any) -> Markup:
    return Markup(yamlload.dump(_plain(value), flow_style=True))


def yaml_dquote(value: Any) -> Markup:
    return Markup(yamlload.dump(str(value), flow_style=True, default_style='"'))


def yaml_squote(value: Any) -> Markup:
    return Markup(yamlload.dump(str(value), flow_style=True, default_style="'"))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """Turn Jinja-side containers (Markup, tuples, generators) into plain data."""
    kind = type(value)
    if kind in _SCALARS:  # fast path: exact types only (Markup, a str subclass, goes on below)
        return value
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    if isinstance(value, Markup):
        return str(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)) or (
        isinstance(value, Iterable) and not isinstance(value, (str, bytes))
    ):
        return [_plain(v) for v in value]
    return value


def regex_search(txt: str, rgx: str, ignorecase: bool = False, multiline: bool = False) -> tuple[Any, ...] | None:
    flags = (re.I if ignorecase else 0) | (re.M if multiline else 0)
    return _groups(re.search(rgx, txt, flags))


def regex_match(txt: str, rgx: str, ignorecase: bool = False, multiline: bool = False) -> tuple[Any, ...] | None:
    flags = (re.I if ignorecase else 0) | (re.M if multiline else 0)
    return _groups(re.match(rgx, txt, flags))


def _groups(found: re.Match[str] | None) -> tuple[Any, ...] | None:
    """The groups of a match, or (whole match,) for a pattern without groups (as Salt's filters)."""
    if found is None:
        return None
    return found.groups() or (found.group(),)


def regex_replace(txt: str, rgx: str, val: str, ignorecase: bool = False, multiline: bool = False) -> str:
    flags = (re.I if ignorecase else 0) | (re.M if multiline else 0)
    return re.sub(rgx, val, txt, flags=flags)


def is_ip(value: Any, options: str | None = None) -> bool:
    try:
        ipaddress.ip_address(str(value))
        return True
    except ValueError:
        return False


def is_ipv4(value: Any) -> bool:
    try:
        return ipaddress.ip_address(str(value)).version == 4
    except ValueError:
        return False


def is_ipv6(value: Any) -> bool:
    try:
        return ipaddress.ip_address(str(value)).version == 6
    except ValueError:
        return False


def ipaddr(value: Any, options: str | None = None) -> Any:
    values = value if isinstance(value, (list, tuple)) else [value]
    good = []
    for item in values:
        try:
            ipaddress.ip_interface(str(item))
            good.append(item)
        except ValueError:
            continue
    if isinstance(value, (list, tuple)):
        # as Salt: the IPv4 entries first, then the IPv6 ones
        return sorted(good, key=lambda item: ipaddress.ip_interface(str(item)).version)
    return good[0] if good else None


def network_hosts(value: str, options: str | None = None) -> list[str]:
    return [str(h) for h in ipaddress.ip_network(value, strict=False).hosts()]


def network_size(value: str, options: str | None = None) -> int:
    return ipaddress.ip_network(value, strict=False).num_addresses


def flatten(data: Iterable[Any], levels: int | None = None, preserve_nulls: bool = False) -> list[Any]:
    out: list[Any] = []
    for item in data:
        if isinstance(item, (list, tuple)) and (levels is None or levels > 0):
            out.extend(flatten(item, None if levels is None else levels - 1, preserve_nulls))
        elif item is not None or preserve_nulls:
            out.append(item)
    return out


def compare_lists(old: list[Any], new: list[Any]) -> dict[str, Any]:
    ret: dict[str, Any] = {}
    added = [x for x in new if x not in old]
    removed = [x for x in old if x not in new]
    if added:
        ret["new"] = added
    if removed:
        ret["old"] = removed
    return ret


def compare_dicts(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    ret = {}
    for key in set(old) | set(new):
        if old.get(key) != new.get(key):
            ret[key] = {"old": old.get(key, ""), "new": new.get(key, "")}
    return ret


def human_to_bytes(size: Any, default_unit: str = "B") -> int:
    text = str(size).strip().upper()
    match = re.match(r"^([0-9.]+)\s*([KMGTPE]?)I?B?$", text)
    if not match:
        return 0
    number = float(match.group(1))
    unit = match.group(2) or default_unit.upper().rstrip("B")
    power = "BKMGTPE".index(unit) if unit in "KMGTPE" else 0
    return int(number * (1024**power))


def to_snake_case(text: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", text).lower()


def to_camelcase(text: str, uppercamel: bool = False) -> str:
    parts = text.split("_")
    head = parts[0].capitalize() if uppercamel else parts[0]
    return head + "".join(p.capitalize() for p in parts[1:])


def traverse(data: Any, key: str, default: Any = None, delimiter: str = ":") -> Any:
    return traverse_dict_and_list(data, key, default, delimiter)


def traverse_dict_and_list(data: Any, key: str, default: Any = None, delimiter: str = ":") -> Any:
    """Salt's traverse_dict_and_list: 'a:b:0' walks dicts and list indexes."""
    ptr = data
    for part in str(key).split(delimiter) if delimiter else [key]:
        if isinstance(ptr, Mapping):
            if part in ptr:
                ptr = ptr[part]
                continue
            return default
        if isinstance(ptr, list):
            try:
                ptr = ptr[int(part)]
                continue
            except (ValueError, IndexError):
                # a list of dicts: look the key up in each
                for item in ptr:
                    if isinstance(item, Mapping) and part in item:
                        ptr = item[part]
                        break
                else:
                    return default
                continue
        return default
    return ptr


def dict_to_sls_yaml_params(value: Mapping[str, Any], flow_style: bool = False) -> Markup:
    return Markup(yamlload.dump([{k: v} for k, v in value.items()], flow_style=flow_style))


def method_call(obj: Any, f_name: str, *f_args: Any, **f_kwargs: Any) -> Any:
    if f_name.startswith("_"):
        raise ValueError(f"method_call refuses private method {f_name!r}")
    return getattr(obj, f_name, lambda *a, **k: None)(*f_args, **f_kwargs)


def _avg(values: Iterable[Any]) -> float:
    vals = list(values)
    return float(sum(vals)) / len(vals) if vals else 0.0


def _union(a: Iterable[Any], b: Iterable[Any]) -> list[Any]:
    return unique(list(a) + list(b))


def _intersect(a: Iterable[Any], b: Iterable[Any]) -> list[Any]:
    bl = list(b)
    return unique([x for x in a if x in bl])


def _difference(a: Iterable[Any], b: Iterable[Any]) -> list[Any]:
    bl = list(b)
    return unique([x for x in a if x not in bl])


def _symmetric_difference(a: Iterable[Any], b: Iterable[Any]) -> list[Any]:
    al, bl = list(a), list(b)
    return unique([x for x in al if x not in bl] + [x for x in bl if x not in al])


def _strftime(value: Any, fmt: str = "%Y-%m-%d") -> str:
    if isinstance(value, (int, float)):
        return time.strftime(fmt, time.gmtime(value))
    return time.strftime(fmt)


def _to_num(text: Any) -> Any:
    try:
        return int(text)
    except (TypeError, ValueError):
        try:
            return float(text)
        except (TypeError, ValueError):
            return text


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _is_iter(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes))


def _hash(name: str) -> Callable[[Any], str]:
    def hasher(value: Any) -> str:
        data = value.encode() if isinstance(value, str) else bytes(value)
        return hashlib.new(name, data).hexdigest()

    return hasher


def _b64encode(value: Any) -> str:
    data = value.encode() if isinstance(value, str) else bytes(value)
    return base64.b64encode(data).decode()


def _b64decode(value: str) -> str:
    return base64.b64decode(value).decode("utf-8", "replace")


# The namespace of Salt's uuid filter, so that the same value gives the same UUID as under Salt.
_SALT_UUID_NAMESPACE = "91633EBF-1C86-5E33-935A-28061F4B480E"


def _uuid(value: Any) -> str:
    import uuid  # lazily: uuid imports platform, a few ms of every CLI start-up

    return str(uuid.uuid5(uuid.UUID(_SALT_UUID_NAMESPACE), str(value)))


def _exactly_n(values: Iterable[Any], n: int = 1) -> bool:
    return sum(1 for v in values if v) == n


FILTERS: dict[str, Any] = {
    "to_bool": to_bool,
    "sequence": sequence,
    "unique": unique,
    "yaml": yaml_filter,
    "json": json_filter,
    "json_encode": json_filter,
    "tojson": tojson,
    "yaml_encode": yaml_encode,
    "yaml_dquote": yaml_dquote,
    "yaml_squote": yaml_squote,
    "yaml_safe": yaml_encode,
    "regex_search": regex_search,
    "regex_match": regex_match,
    "regex_replace": regex_replace,
    "regex_escape": re.escape,
    "quote": shlex.quote,
    "is_ip": is_ip,
    "is_ipv4": is_ipv4,
    "is_ipv6": is_ipv6,
    "ipaddr": ipaddr,
    "ipv4": lambda v, options=None: [x for x in sequence(v) if is_ipv4(str(x).split("/")[0])],
    "ipv6": lambda v, options=None: [x for x in sequence(v) if is_ipv6(str(x).split("/")[0])],
    "network_hosts": network_hosts,
    "network_size": network_size,
    "flatten": flatten,
    "compare_lists": compare_lists,
    "compare_dicts": compare_dicts,
    "human_to_bytes": human_to_bytes,
    "to_snake_case": to_snake_case,
    "to_camelcase": to_camelcase,
    "traverse": traverse,
    "dict_to_sls_yaml_params": dict_to_sls_yaml_params,
    "method_call": method_call,
    "avg": _avg,
    "union": _union,
    "intersect": _intersect,
    "difference": _difference,
    "symmetric_difference": _symmetric_difference,
    "strftime": _strftime,
    "date_format": _strftime,
    "to_num": _to_num,
    "is_list": _is_list,
    "is_iter": _is_iter,
    "md5": _hash("md5"),
    "sha1": _hash("sha1"),
    "sha256": _hash("sha256"),
    "sha512": _hash("sha512"),
    "base64_encode": _b64encode,
    "base64_decode": _b64decode,
    "uuid": _uuid,
    "exactly_n_true": _exactly_n,
    "exactly_one_true": lambda values: _exactly_n(values, 1),
    "combinations": lambda v, r=None: list(itertools.combinations(v, r if r is not None else len(v))),
    "combinations_with_replacement": lambda v, r: list(itertools.combinations_with_replacement(v, r)),
    "permutations": lambda v, r=None: list(itertools.permutations(v, r)),
    "product": lambda *its, repeat=1: list(itertools.product(*its, repeat=repeat)),
    "zip": lambda *its: list(zip(*its, strict=False)),
    "zip_longest": lambda *its, fillvalue=None: list(itertools.zip_longest(*its, fillvalue=fillvalue)),
    "str_to_num": _to_num,
}

TESTS: dict[str, Any] = {
    "match": lambda value, rgx, ignorecase=False, multiline=False: regex_match(
        str(value), rgx, ignorecase, multiline) is not None,
    "search": lambda value, rgx, ignorecase=False, multiline=False: regex_search(
        str(value), rgx, ignorecase, multiline) is not None,
    "is_ip": is_ip,
    "is_ipv4": is_ipv4,
    "is_ipv6": is_ipv6,
    "list": _is_list,
    "iter": _is_iter,
}
