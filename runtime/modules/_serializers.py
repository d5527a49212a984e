"""Salt's serializers (salt/serializers/*): what slsutil.serialize / deserialize use."""

from __future__ import annotations

import configparser
import datetime
import io
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import yaml


class SerializerNotFound(Exception):
    pass


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(_BaseDumper):
    """Salt's serializers.yaml.Dumper: the safe dumper, subclasses of the plain types included."""


_Dumper.add_multi_representer(type(None), _Dumper.represent_none)
_Dumper.add_multi_representer(str, _Dumper.represent_str)
_Dumper.add_multi_representer(bool, _Dumper.represent_bool)
_Dumper.add_multi_representer(int, _Dumper.represent_int)
_Dumper.add_multi_representer(float, _Dumper.represent_float)
_Dumper.add_multi_representer(list, _Dumper.represent_list)
_Dumper.add_multi_representer(tuple, _Dumper.represent_list)
_Dumper.add_multi_representer(dict, _Dumper.represent_dict)
_Dumper.add_multi_representer(set, _Dumper.represent_set)
_Dumper.add_multi_representer(datetime.date, _Dumper.represent_date)
_Dumper.add_multi_representer(datetime.datetime, _Dumper.represent_datetime)
_Dumper.add_multi_representer(OrderedDict, _Dumper.represent_dict)


def _plain(value: Any) -> Any:
    """Mappings that are not dicts (Jinja's, ChainMap) become dicts, so the dumpers know them."""
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def yaml_serialize(obj: Any, **options: Any) -> str:
    options.setdefault("Dumper", _Dumper)
    options.setdefault("default_flow_style", None)
    text = yaml.dump(_plain(obj), **options)
    if text.endswith("\n...\n"):
        return text[:-5]
    if text.endswith("\n"):
        return text[:-1]
    return text


def yaml_deserialize(stream_or_string: Any, **options: Any) -> Any:
    options.setdefault("Loader", _BaseLoader)
    return yaml.load(stream_or_string, **options)  # noqa: S506 - the safe loader (C or Python)


def json_serialize(obj: Any, **options: Any) -> str:
    options.setdefault("ensure_ascii", False)
    options.pop("fp", None)
    return json.dumps(_plain(obj), **options)


def json_deserialize(stream_or_string: Any, **options: Any) -> Any:
    if isinstance(stream_or_string, bytes):
        stream_or_string = stream_or_string.decode("utf-8")
    return json.loads(stream_or_string)


def configparser_serialize(obj: Any, **options: Any) -> str:
    if not isinstance(obj, Mapping):
        raise TypeError(f"configparser can only serialize dictionaries, not {type(obj)}")
    options.pop("fp", None)
    parser = configparser.ConfigParser(**options)
    for section, keys in obj.items():
        section = str(section)
        if section != parser.default_section:
            parser.add_section(section)
        for key, value in keys.items():
            parser.set(section, parser.optionxform(str(key)), None if value is None else str(value))
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def configparser_deserialize(stream_or_string: Any, **options: Any) -> dict:
    parser = configparser.ConfigParser(**options)
    text = stream_or_string.decode("utf-8") if isinstance(stream_or_string, bytes) else stream_or_string
    parser.read_file(io.StringIO(text))
    return {name: dict(parser.items(name)) for name in parser.sections()}


def msgpack_serialize(obj: Any, **options: Any) -> bytes:
    import msgpack

    return msgpack.packb(_plain(obj), **options)


def msgpack_deserialize(stream_or_string: Any, **options: Any) -> Any:
    import msgpack

    return msgpack.unpackb(stream_or_string, **options)


SERIALIZERS: dict[str, dict[str, Callable[..., Any]]] = {
    "yaml": {"serialize": yaml_serialize, "deserialize": yaml_deserialize},
    "yamlex": {"serialize": yaml_serialize, "deserialize": yaml_deserialize},
    "json": {"serialize": json_serialize, "deserialize": json_deserialize},
    "configparser": {"serialize": configparser_serialize, "deserialize": configparser_deserialize},
    "msgpack": {"serialize": msgpack_serialize, "deserialize": msgpack_deserialize},
}


def get(serializer: str, fn_name: str) -> Callable[..., Any]:
    found = SERIALIZERS.get(serializer)
    if not found:
        raise SerializerNotFound(f"Serializer '{serializer}' not found.")
    return found[fn_name]
