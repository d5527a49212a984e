"""Salt's Jinja filters and tests (salt/utils/jinja.py, data.py, stringutils.py, hashutils.py,
dictupdate.py, yamlencoding.py, dateutils.py, path.py), as pure functions with Salt's semantics.

The network filters (ipaddr, ipv4, network_hosts ...) are in compiler/jinja_net_filters.py; the filters
that read the host (which, file_hashsum, is_empty, list_files ...) are in compiler/jinja_host_filters.py
and go through the render's ``salt`` table, so the offline rule applies to them too.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac as hmaclib
import io
import itertools
import json
import os
import posixpath
import random
import re
import shlex
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import jinja2
import yaml
from markupsafe import Markup

from compiler import jinja_net_filters, saltdata


class FilterError(jinja2.TemplateRuntimeError):
    """A filter given values it cannot handle (Salt raises SaltInvocationError / SaltException)."""


# -- bools, sequences, sets ---------------------------------------------------------------------------


def _hashable(value: object) -> bool:
    """Salt's test for "not a container": a list, dict or set is unhashable (no type narrowing here:
    the value stays whatever Jinja passed)."""
    return isinstance(value, Hashable)


def to_bool(val: Any) -> bool:
    """salt.utils.jinja.to_bool: 'yes'/'1'/'true' (any case), a positive int, a non-empty container."""
    if val is None:
        return False
    if isinstance(val, bool):
        return val
    if isinstance(val, str):
        return val.lower() in ("yes", "1", "true")
    if isinstance(val, int):
        return val > 0
    if not isinstance(val, Hashable):
        return len(val) > 0
    return False


def sequence(data: Any) -> Any:
    """Wrap anything but a list, tuple, set or dict in a list."""
    if not isinstance(data, (list, tuple, set, dict)):
        return [data]
    return data


def unique(values: Any) -> Any:
    """Salt's unique: a set for a hashable value (a string gives its characters), else the list of
    distinct items in order."""
    if _hashable(values):
        return set(values)
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def union(lst1: Any, lst2: Any) -> Any:
    if _hashable(lst1) and _hashable(lst2):
        return set(lst1) | set(lst2)
    return unique(lst1 + lst2)


def intersect(lst1: Any, lst2: Any) -> Any:
    if _hashable(lst1) and _hashable(lst2):
        return set(lst1) & set(lst2)
    return unique([ele for ele in lst1 if ele in lst2])


def difference(lst1: Any, lst2: Any) -> Any:
    if _hashable(lst1) and _hashable(lst2):
        return set(lst1) - set(lst2)
    return unique([ele for ele in lst1 if ele not in lst2])


def symmetric_difference(lst1: Any, lst2: Any) -> Any:
    if _hashable(lst1) and _hashable(lst2):
        return set(lst1) ^ set(lst2)
    both = intersect(lst1, lst2)
    return unique([ele for ele in union(lst1, lst2) if ele not in both])


def lst_avg(lst: Any) -> float:
    if not _hashable(lst):
        return float(sum(lst) / len(lst))
    return float(lst)


def is_list(value: Any) -> bool:
    return isinstance(value, list)


def is_iter(thing: Any, ignore: Any = (str,)) -> bool:
    if ignore and isinstance(thing, ignore):
        return False
    try:
        iter(thing)
        return True
    except TypeError:
        return False


def flatten(data: Iterable[Any], levels: int | None = None, preserve_nulls: bool = False,
            _ids: set[int] | None = None) -> list[Any]:
    """salt.utils.data.flatten: nested iterables (not strings) spliced in; None/'None'/'null' dropped
    unless preserve_nulls."""
    _ids = set() if _ids is None else _ids
    if id(data) in _ids:
        raise RecursionError("Reference cycle detected. Check input list.")
    _ids.add(id(data))
    out: list[Any] = []
    for element in data:
        if not preserve_nulls and element in (None, "None", "null"):
            continue
        if is_iter(element):
            if levels is None:
                out.extend(flatten(element, preserve_nulls=preserve_nulls, _ids=_ids))
            elif levels >= 1:
                out.extend(flatten(element, levels=int(levels) - 1, preserve_nulls=preserve_nulls, _ids=_ids))
            else:
                out.append(element)
        else:
            out.append(element)
    return out


def exactly_n(iterable: Iterable[Any], amount: int = 1) -> bool:
    items = iter(iterable)
    return all(any(items) for _ in range(amount)) and not any(items)


def exactly_one(iterable: Iterable[Any]) -> bool:
    return exactly_n(iterable)


def substring_in_list(string_to_search_for: str, list_to_search: Iterable[str]) -> bool:
    return any(string_to_search_for in s for s in list_to_search)


def sorted_ignorecase(to_sort: Iterable[str]) -> list[str]:
    return sorted(to_sort, key=lambda x: x.lower())


def compare_lists(old: Any = None, new: Any = None) -> dict[str, list[Any]]:
    ret: dict[str, list[Any]] = {}
    for item in new:
        if item not in old:
            ret.setdefault("new", []).append(item)
    for item in old:
        if item not in new:
            ret.setdefault("old", []).append(item)
    return ret


def compare_dicts(old: Any = None, new: Any = None) -> dict[Any, dict[str, Any]]:
    ret = {}
    for key in set(new or {}).union(old or {}):
        if key not in old:
            ret[key] = {"old": "", "new": new[key]}
        elif key not in new:
            ret[key] = {"new": "", "old": old[key]}
        elif new[key] != old[key]:
            ret[key] = {"old": old[key], "new": new[key]}
    return ret


def to_entries(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        return [{"key": key, "value": value} for key, value in data.items()]
    if isinstance(data, list):
        return [{"key": idx, "value": value} for idx, value in enumerate(data)]
    raise FilterError("Input data must be a dict or list")


def from_entries(entries: Iterable[Mapping[Any, Any]]) -> dict[Any, Any]:
    ret = {}
    for entry in entries:
        lowered = {str(k).lower(): v for k, v in entry.items()}
        for key in ("key", "name"):
            keyval = lowered.get(key)
            if keyval:
                ret[keyval] = lowered.get("value")
                break
    return ret


def mysql_to_dict(data: Iterable[str], key: str) -> dict[Any, dict[str, Any]]:
    ret = {}
    headers = [""]
    for line in data:
        if not line or line.startswith("+"):
            continue
        comps = [comp.strip() for comp in line.split("|")]
        if len(headers) > 1:
            row = {headers[field]: to_num(comps[field]) for field in range(1, len(headers) - 1)}
            ret[row[key]] = row
        else:
            headers = comps
    return ret


def random_sample(value: Any, size: int, seed: Any = None) -> list[Any]:
    if seed is None:
        return random.sample(value, size)
    return random.Random(hash(seed)).sample(value, size)


def random_shuffle(value: Any, seed: Any = None) -> list[Any]:
    return random_sample(value, len(value), seed=seed)


def skip(data: Any) -> str:
    return ""


def method_call(obj: Any, f_name: str, *f_args: Any, **f_kwargs: Any) -> Any:
    if not isinstance(f_name, str) or f_name.startswith("_"):
        raise FilterError(f"method_call refuses the method {f_name!r}")
    return getattr(obj, f_name, lambda *args, **kwargs: None)(*f_args, **f_kwargs)


# -- dict editing (salt.utils.dictupdate) -----------------------------------------------------------


def _dict_rpartition(in_dict: Any, keys: Any, delimiter: str = ":", ordered_dict: bool = False) -> tuple[Any, Any]:
    if delimiter in keys:
        all_but_last, _, last = keys.rpartition(delimiter)
        pointer = in_dict
        for key in all_but_last.split(delimiter):
            if key not in pointer or pointer[key] is None:
                pointer[key] = OrderedDict() if ordered_dict else {}
            pointer = pointer[key]
        return pointer, last
    return in_dict, keys


def set_dict_key_value(in_dict: Any, keys: str, value: Any, delimiter: str = ":", ordered_dict: bool = False) -> Any:
    pointer, last = _dict_rpartition(in_dict, keys, delimiter, ordered_dict)
    pointer[last] = value
    return in_dict


def update_dict_key_value(in_dict: Any, keys: str, value: Any, delimiter: str = ":",
                          ordered_dict: bool = False) -> Any:
    pointer, last = _dict_rpartition(in_dict, keys, delimiter, ordered_dict)
    if last not in pointer or pointer[last] is None:
        pointer[last] = OrderedDict() if ordered_dict else {}
    try:
        pointer[last].update(value)
    except AttributeError:
        raise FilterError(f"The last key contains a {type(pointer[last])}, which cannot update.") from None
    except (ValueError, TypeError):
        raise FilterError(f"Cannot update {type(pointer[last])} with a {type(value)}.") from None
    return in_dict


def append_dict_key_value(in_dict: Any, keys: str, value: Any, delimiter: str = ":",
                          ordered_dict: bool = False) -> Any:
    pointer, last = _dict_rpartition(in_dict, keys, delimiter, ordered_dict)
    if last not in pointer or pointer[last] is None:
        pointer[last] = []
    try:
        pointer[last].append(value)
    except AttributeError:
        raise FilterError(f"The last key contains a {type(pointer[last])}, which cannot append.") from None
    return in_dict


def extend_dict_key_value(in_dict: Any, keys: str, value: Any, delimiter: str = ":",
                          ordered_dict: bool = False) -> Any:
    pointer, last = _dict_rpartition(in_dict, keys, delimiter, ordered_dict)
    if last not in pointer or pointer[last] is None:
        pointer[last] = []
    try:
        pointer[last].extend(value)
    except AttributeError:
        raise FilterError(f"The last key contains a {type(pointer[last])}, which cannot extend.") from None
    except TypeError:
        raise FilterError(f"Cannot extend {type(pointer[last])} with a {type(value)}.") from None
    return in_dict


# -- strings, numbers, regular expressions -------------------------------------------------------------


def to_num(text: Any) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def to_bytes(s: Any, encoding: Any = None, errors: str = "strict") -> bytes:
    encodings = ("utf-8",) if encoding is None else (encoding if isinstance(encoding, (tuple, list)) else (encoding,))
    if isinstance(s, bytes):
        return s
    if isinstance(s, bytearray):
        return bytes(s)
    if isinstance(s, str):
        error: Exception | None = None
        for enc in encodings:
            try:
                return s.encode(enc, errors)
            except UnicodeEncodeError as exc:
                error = exc
        raise error or ValueError("encoding cannot be empty")
    raise TypeError(f"expected str, bytes, or bytearray not {type(s)}")


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else to_bytes(value if isinstance(value, (str, bytearray)) else str(value))


def is_hex(value: Any) -> bool:
    try:
        int(value, 16)
        return True
    except (TypeError, ValueError):
        return False


def contains_whitespace(text: str) -> bool:
    return any(x.isspace() for x in text)


def human_to_bytes(size: Any, default_unit: str = "B", handle_metric: bool = False) -> int:
    found = re.match(r"(?P<value>[0-9.]*)\s*(?P<unit>.*)$", str(size).strip())
    assert found is not None  # the pattern matches any text
    text, unit = found.group("value"), found.group("unit").lower() or default_unit.lower()
    value: float
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return 0
    dec = False
    if re.match(r"[kmgtpezy]b$", unit):
        dec = bool(handle_metric)
    elif not re.match(r"(b|[kmgtpezy](ib)?)$", unit):
        return 0
    power = "bkmgtpezy".index(unit[0])
    value *= 10 ** (power * 3) if dec else 2 ** (power * 10)
    return int(value)


def _expr_match(line: str, expr: str) -> bool:
    import fnmatch

    try:
        if fnmatch.fnmatch(line, expr):
            return True
        try:
            if re.match(rf"\A{expr}\Z", line):
                return True
        except re.error:
            pass
    except TypeError:
        pass
    return False


def check_whitelist_blacklist(value: Any, whitelist: Any = None, blacklist: Any = None) -> bool:
    blacklist = [blacklist] if isinstance(blacklist, str) else (blacklist or [])
    whitelist = [whitelist] if isinstance(whitelist, str) else (whitelist or [])
    for name, given in (("blacklist", blacklist), ("whitelist", whitelist)):
        if not hasattr(given, "__iter__"):
            raise TypeError(f"Expecting iterable {name}, but got {type(given).__name__} ({given})")
    black = any(_expr_match(value, expr) for expr in blacklist)
    white = any(_expr_match(value, expr) for expr in whitelist)
    if blacklist and not whitelist:
        return not black
    if whitelist and not blacklist:
        return white
    if blacklist and whitelist:
        return not black and white
    return True


def to_snake_case(camel_input: str) -> str:
    res = camel_input[0].lower()
    for i, letter in enumerate(camel_input[1:], 1):
        if letter.isupper() and (camel_input[i - 1].islower()
                                 or (i != len(camel_input) - 1 and camel_input[i + 1].islower())):
            res += "_"
        res += letter.lower()
    return res


def to_camelcase(snake_input: str, uppercamel: bool = False) -> str:
    words = snake_input.split("_")
    if uppercamel:
        words[0] = words[0].capitalize()
    return words[0] + "".join(word.capitalize() for word in words[1:])


def _flags(ignorecase: bool, multiline: bool) -> int:
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


def regex_search(txt: str, rgx: str, ignorecase: bool = False, multiline: bool = False) -> tuple[Any, ...] | None:
    found = re.search(rgx, txt, _flags(ignorecase, multiline))
    if not found:
        return None
    return found.groups() or (found.group(),)


def regex_match(txt: str, rgx: str, ignorecase: bool = False, multiline: bool = False) -> tuple[Any, ...] | None:
    found = re.match(rgx, txt, _flags(ignorecase, multiline))
    if not found:
        return None
    return found.groups() or (found.group(),)


def regex_replace(txt: str, rgx: str, val: str, ignorecase: bool = False, multiline: bool = False) -> str:
    return re.compile(rgx, _flags(ignorecase, multiline)).sub(val, txt)


def regex_escape(value: str) -> str:
    return re.escape(value)


def quote(txt: str) -> str:
    return shlex.quote(txt)


def path_join(*parts: Any, **kwargs: Any) -> str:
    """salt.utils.path.join: each part normalised, leading separators of later parts dropped."""
    use_posixpath = kwargs.pop("use_posixpath", False)
    kwargs = {k: v for k, v in kwargs.items() if not k.startswith("__")}
    if kwargs:
        raise FilterError(f"path_join: unknown keyword arguments {', '.join(sorted(kwargs))}")
    pathlib = posixpath if use_posixpath else os.path
    normed: list[str] = [pathlib.normpath(str(p)) for p in parts]
    if not normed:
        return ""
    root, rest = normed[0], normed[1:]
    joined: str = pathlib.join(root, *[p.lstrip(os.sep) for p in rest]) if rest else root
    normed_path: str = pathlib.normpath(joined)
    return normed_path


# -- dates ----------------------------------------------------------------------------------------


def _date_cast(date: Any) -> datetime.datetime:
    if date is None:
        return datetime.datetime.now()
    if isinstance(date, datetime.datetime):
        return date
    try:
        if isinstance(date, str):
            date = int(date) if date.isdigit() else float(date)
        return datetime.datetime.fromtimestamp(date)
    except Exception:  # noqa: BLE001 - Salt's message for anything it cannot read
        raise FilterError(f"Unable to parse {date}. Consider installing timelib") from None


def strftime(date: Any = None, format: str = "%Y-%m-%d") -> str:  # noqa: A002 - Salt's argument name
    return _date_cast(date).strftime(format)


# -- hashes and encodings ---------------------------------------------------------------------------


def base64_encode(instr: Any) -> str:
    return base64.b64encode(_bytes(instr)).decode()


def base64_decode(instr: Any) -> Any:
    decoded = base64.b64decode(_bytes(instr))
    try:
        return decoded.decode()
    except UnicodeDecodeError:
        return decoded


def _digest(name: str) -> Callable[[Any], str]:
    def digest(instr: Any) -> str:
        return hashlib.new(name, _bytes(instr)).hexdigest()

    digest.__name__ = name
    return digest


def hmac_signature(string: Any, shared_secret: Any, challenge_hmac: Any) -> bool:
    signature = hmaclib.new(_bytes(shared_secret), _bytes(string), hashlib.sha256)
    return base64.b64encode(signature.digest()) == _bytes(challenge_hmac)


def hmac_compute(string: Any, shared_secret: Any) -> str:
    return hmaclib.new(_bytes(shared_secret), _bytes(string), hashlib.sha256).hexdigest()


def random_hash(size: int = 9999999999, hash_type: str | None = None) -> str:
    hasher = getattr(hashlib, hash_type or "md5")
    digest: str = hasher(_bytes(str(random.SystemRandom().randint(0, size)))).hexdigest()
    return digest


def random_str(size: int = 32) -> str:
    return base64.b64encode(os.urandom(size)).replace(b"\n", b"")[:size].decode()


_SALT_UUID_NAMESPACE = "91633EBF-1C86-5E33-935A-28061F4B480E"


def uuid_filter(val: Any) -> str:
    import uuid  # lazily: uuid imports platform, a few ms of every CLI start-up

    return str(uuid.uuid5(uuid.UUID(_SALT_UUID_NAMESPACE), str(val)))


def _encode(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {_encode_scalar(k): _encode(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_encode(v) for v in data]
    return _encode_scalar(data)


def _encode_scalar(value: Any) -> Any:
    if isinstance(value, (str, bytearray)):
        return to_bytes(value)
    return value


def json_encode_dict(data: Mapping[Any, Any], *args: Any, **kwargs: Any) -> dict[Any, Any]:
    """salt.utils.data.encode_dict: every string key and value as UTF-8 bytes."""
    encoded: dict[Any, Any] = _encode(data)
    return encoded


def json_encode_list(data: Iterable[Any], *args: Any, **kwargs: Any) -> list[Any]:
    """salt.utils.data.encode_list: every string as UTF-8 bytes."""
    encoded: list[Any] = _encode(list(data))
    return encoded


# -- YAML / JSON output and input (salt.utils.yamlencoding, the serializer extension) ---------------

_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _SaltSafeDumper(_SafeDumper):  # type: ignore[misc]
    """salt.utils.yamldumper.SafeOrderedDumper: OrderedDict keeps its order, unknown types are NULL."""


def _represent_ordered(dumper: Any, data: Any) -> Any:
    return dumper.represent_dict(list(data.items()))


def _represent_undefined(dumper: Any, data: Any) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "NULL")


_SaltSafeDumper.add_representer(OrderedDict, _represent_ordered)
_SaltSafeDumper.add_representer(None, _represent_undefined)


def _yaml_dump(value: Any, flow_style: Any) -> str:
    return yaml.dump(value, Dumper=_SaltSafeDumper, default_flow_style=flow_style, allow_unicode=True)


def yaml_filter(value: Any, flow_style: Any = True) -> Markup:
    text = _yaml_dump(value, flow_style).strip()
    if text.endswith("\n..."):
        text = text[:-4]
    return Markup(text)


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


def _plain_tree(value: Any, budget: list[int]) -> bool:
    """True when value holds only dicts, lists, tuples and plain scalars (at most budget[0] nodes)."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if kind is dict:
        return all(type(k) in _PLAIN_TYPES and _plain_tree(v, budget) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_plain_tree(v, budget) for v in value)
    return False


def cached_yaml_filter(max_entries: int = 2048) -> Callable[..., Markup]:
    """The `yaml` filter with a bounded cache for plain data: formulas dump the same map again and again
    (log.debug of their lookups, in every sls that imports the map), and dumping is costly."""
    cache: dict[tuple[Any, str], Markup] = {}

    def yaml_cached(value: Any, flow_style: Any = True) -> Markup:
        if not _plain_tree(value, [20000]):
            return yaml_filter(value, flow_style)
        key = (flow_style, repr(value))
        found = cache.get(key)
        if found is None:
            found = yaml_filter(value, flow_style)
            if len(cache) >= max_entries:
                cache.pop(next(iter(cache)))
            cache[key] = found
        return found

    return yaml_cached


def json_filter(value: Any, sort_keys: bool = True, indent: int | None = None) -> Markup:
    return Markup(json.dumps(value, sort_keys=sort_keys, indent=indent, ensure_ascii=False).strip())


def python_filter(value: Any) -> Markup:
    import pprint

    return Markup(pprint.pformat(value).strip())


def tojson(val: Any, indent: int | None = None, **options: Any) -> str:
    options.setdefault("ensure_ascii", True)
    if indent is not None:
        options["indent"] = indent
    text = json.dumps(val, **options)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


def yaml_dquote(text: Any) -> str:
    with io.StringIO() as out:
        emitter = yaml.emitter.Emitter(out, width=sys.maxsize)
        emitter.write_double_quoted(str(text))
        return out.getvalue()


def yaml_squote(text: Any) -> str:
    with io.StringIO() as out:
        emitter = yaml.emitter.Emitter(out, width=sys.maxsize)
        emitter.write_single_quoted(str(text))
        return out.getvalue()


def yaml_encode(data: Any) -> Any:
    node = yaml.representer.SafeRepresenter().represent_data(data)
    if not isinstance(node, yaml.ScalarNode):
        raise TypeError(f"yaml_encode() only works with YAML scalar data; failed for {type(data)}")
    if node.tag.rsplit(":", 1)[-1] == "str":
        return yaml_dquote(node.value)
    return node.value


def dict_to_sls_yaml_params(value: Mapping[Any, Any], flow_style: Any = False) -> Markup:
    return yaml_filter([{key: val} for key, val in value.items()], flow_style=flow_style)


def xml_filter(value: Any) -> Markup:
    from xml.dom import minidom
    from xml.etree.ElementTree import Element, SubElement, tostring  # noqa: S405 - building, not parsing

    def normalize(item: Any) -> list[Any]:
        if isinstance(item, (list, tuple)):
            return list(item) if item and isinstance(item[0], str) else []
        if isinstance(item, dict):
            return list(item.items())
        raise FilterError("Value is not a dict or list. Cannot render as XML")

    def tree(pairs: Any, element: Any = None) -> Any:
        sub = None
        for tag, attrs in pairs:
            if isinstance(attrs, list):
                for attr in attrs:
                    tree(((tag, attr),), element)
            elif element is not None:
                sub = SubElement(element, tag)
            else:
                sub = Element(tag)
            if isinstance(attrs, (str, int, bool, float)):
                sub.text = str(attrs)  # type: ignore[union-attr]
                continue
            if isinstance(attrs, dict):
                sub.attrib = {k: str(v) for k, v in attrs.items() if not isinstance(v, (dict, list))}  # type: ignore[union-attr]
            for child_tag, val in [i for i in normalize(attrs) if isinstance(i[1], (dict, list))]:
                tree(((child_tag, val),), sub)
        return sub

    return Markup(minidom.parseString(tostring(tree(normalize(value)))).toprettyxml(indent=" "))  # noqa: S318


def json_query(data: Any, expr: str) -> Any:
    try:
        import jmespath  # type: ignore[import-untyped]  # ships no type information
    except ImportError:
        raise FilterError("json_query requires jmespath module installed") from None
    return jmespath.search(expr, data)


def _itertools(func: Callable[..., Any]) -> Callable[..., Any]:
    def apply(value: Any, *args: Any, **kwargs: Any) -> Any:
        return func(value, *args, **kwargs)

    apply.__name__ = func.__name__
    return apply


FILTERS: dict[str, Any] = {
    # salt.utils.jinja / data / stringutils / dictupdate / hashutils / dateutils / path / yamlencoding
    "append_dict_key_value": append_dict_key_value,
    "avg": lst_avg,
    "base64_decode": base64_decode,
    "base64_encode": base64_encode,
    "check_whitelist_blacklist": check_whitelist_blacklist,
    "compare_dicts": compare_dicts,
    "compare_lists": compare_lists,
    "contains_whitespace": contains_whitespace,
    "date_format": strftime,
    "difference": difference,
    "exactly_n_true": exactly_n,
    "exactly_one_true": exactly_one,
    "extend_dict_key_value": extend_dict_key_value,
    "flatten": flatten,
    "from_entries": from_entries,
    "hmac": hmac_signature,
    "hmac_compute": hmac_compute,
    "human_to_bytes": human_to_bytes,
    "intersect": intersect,
    "is_hex": is_hex,
    "is_iter": is_iter,
    "is_list": is_list,
    "json_decode_dict": json_encode_dict,
    "json_decode_list": json_encode_list,
    "json_encode_dict": json_encode_dict,
    "json_encode_list": json_encode_list,
    "json_query": json_query,
    "max": max,
    "md5": _digest("md5"),
    "method_call": method_call,
    "min": min,
    "mysql_to_dict": mysql_to_dict,
    "path_join": path_join,
    "quote": quote,
    "rand_str": random_hash,
    "random_hash": random_hash,
    "random_sample": random_sample,
    "random_shuffle": random_shuffle,
    "random_str": random_str,
    "regex_escape": regex_escape,
    "regex_match": regex_match,
    "regex_replace": regex_replace,
    "regex_search": regex_search,
    "sequence": sequence,
    "set_dict_key_value": set_dict_key_value,
    "sha1": _digest("sha1"),
    "sha256": _digest("sha256"),
    "sha512": _digest("sha512"),
    "skip": skip,
    "sorted_ignorecase": sorted_ignorecase,
    "str_to_num": to_num,
    "strftime": strftime,
    "substring_in_list": substring_in_list,
    "symmetric_difference": symmetric_difference,
    "to_bool": to_bool,
    "to_bytes": to_bytes,
    "to_camelcase": to_camelcase,
    "to_entries": to_entries,
    "to_num": to_num,
    "to_snake_case": to_snake_case,
    "tojson": tojson,
    "traverse": saltdata.traverse,
    "union": union,
    "unique": unique,
    "update_dict_key_value": update_dict_key_value,
    "uuid": uuid_filter,
    "yaml_dquote": yaml_dquote,
    "yaml_encode": yaml_encode,
    "yaml_squote": yaml_squote,
    # the serializer extension's filters
    "yaml": yaml_filter,
    "json": json_filter,
    "xml": xml_filter,
    "python": python_filter,
    "dict_to_sls_yaml_params": dict_to_sls_yaml_params,
    "combinations": _itertools(itertools.combinations),
    "combinations_with_replacement": _itertools(itertools.combinations_with_replacement),
    "compress": _itertools(itertools.compress),
    "permutations": _itertools(itertools.permutations),
    "product": _itertools(itertools.product),
    "zip": _itertools(zip),
    "zip_longest": _itertools(itertools.zip_longest),
    **jinja_net_filters.FILTERS,
}


def test_match(txt: Any, rgx: str, ignorecase: bool = False, multiline: bool = False) -> bool:
    return bool(re.compile(rgx, _flags(ignorecase, multiline)).match(txt))


def test_equalto(value: Any, other: Any) -> bool:
    equal: bool = value == other
    return equal


TESTS: dict[str, Any] = {
    "match": test_match,
    "equalto": test_equalto,
    "list": is_list,
}
