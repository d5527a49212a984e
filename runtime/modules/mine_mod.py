"""mine: data minions publish for each other (Salt's mine; docs/mine.md).

``mine.update`` runs the functions of ``mine_functions`` (minion config, pillar and the master's
opts in pillar, merged) and stores their results; ``mine.send`` stores one function's result;
``mine.get`` reads what the minions matching a target stored.  On a minion with a master the
data lives in the master's minion data cache (bank ``mine``) and reads go through the master,
which applies its ``mine_get`` ACL and each entry's ``allow_tgt``; masterless
(``file_client: local``) it lives in ``<cachedir>/mine_cache.json`` and a minion only ever sees its
own, as in Salt.  Offline (``saltpan compile``, the master's pillar) ``mine.get`` answers ``{}``:
no minion's mine is read while compiling (Salt's master-side pillar answers the same).
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime import protocol
from runtime.modules.registry import constant, reads_host, runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv
    from runtime.protocol.base import R

log = logging.getLogger("saltpan.modules.mine")

ACL_ID = "__saltmine_acl__"        # Salt's marks of an entry that carries a minion-side ACL
ACL_VERSION = 1
ACL_DATA = "__data__"
LOCAL_CACHE = "mine_cache.json"


# -- mine_functions ------------------------------------------------------------------------------


def parse_definition(definition: Any) -> tuple[str | None, list[Any], dict[str, Any], dict[str, Any]]:
    """(function, args, kwargs, minion-side ACL) of one ``mine_functions`` entry (Salt's forms:
    ``[]``, ``[arg, {kw: v}]``, ``[{mine_function: fun}, ...]`` or a mapping of keyword arguments)."""
    name: str | None = None
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    if isinstance(definition, Mapping):
        kwargs = dict(definition)
    elif isinstance(definition, list):
        for item in definition:
            if isinstance(item, Mapping):
                kwargs.update(item)
            else:
                args.append(item)
    found = kwargs.pop("mine_function", None)
    name = str(found) if found else None
    acl = {key: value for key in ("allow_tgt", "allow_tgt_type") if (value := kwargs.pop(key, None))}
    return name, args, kwargs, acl


def _configured(env: ModuleEnv) -> dict[str, Any]:
    from runtime.modules import config_mod

    found = config_mod.merge(env, "mine_functions", {})
    return dict(found) if isinstance(found, Mapping) else {}


def _available(env: ModuleEnv, name: str) -> bool:
    from runtime import modules

    if modules.has_function(env, name):
        return True
    log.error("Function %s in mine_functions not available", name)
    return False


def _wrap(value: Any, acl: Mapping[str, Any]) -> Any:
    if not acl.get("allow_tgt"):
        return value
    return {ACL_DATA: value, ACL_ID: ACL_VERSION, **acl}


def _unwrap(entry: Any) -> Any:
    return entry.get(ACL_DATA) if isinstance(entry, Mapping) and ACL_ID in entry else entry


# -- where the data lives ------------------------------------------------------------------------


def _masterless(env: ModuleEnv) -> bool:
    return env.master is None or env.opts.get("file_client") == "local"


def _local_path(env: ModuleEnv) -> str:
    return os.path.join(str(env.opts.get("cachedir") or "."), LOCAL_CACHE)


def _read_local(env: ModuleEnv) -> dict[str, Any]:
    try:
        with open(_local_path(env), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_local(env: ModuleEnv, data: dict[str, Any]) -> bool:
    from runtime.private_files import ensure_private_dir

    path = _local_path(env)
    ensure_private_dir(os.path.dirname(path))
    tmp = f"{path}.part"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
        json.dump(data, fh, default=str)
    os.replace(tmp, path)
    return True


def _ask(env: ModuleEnv, message: protocol.SessionRequest[R]) -> R:
    """One request to the master; a refusal or a silent master is this function's error."""
    from runtime.crypt.errors import RemoteRefusal
    from runtime.modules import CommandError
    from runtime.transport import RequestTimeout

    assert env.master is not None
    try:
        return env.master(message)
    except RemoteRefusal as exc:
        raise CommandError(f"the master refused {message.COMMAND}: {exc}") from None
    except (RequestTimeout, TimeoutError) as exc:
        raise CommandError(f"the master did not answer {message.COMMAND}: {exc}") from None


def _store(env: ModuleEnv, data: dict[str, Any], clear: bool) -> bool:
    if _masterless(env):
        merged = data if clear else {**_read_local(env), **data}
        return _write_local(env, merged)
    _ask(env, protocol.MineStore(data=_plain(data), clear=bool(clear)))
    return True


def _plain(value: Any) -> Any:
    """What travels to the master: msgpack-safe values (as a job's return)."""
    return json.loads(json.dumps(value, default=str))


# -- the functions -------------------------------------------------------------------------------


@runs_command()
def update(env: ModuleEnv, clear: bool = False, mine_functions: Any = None) -> Any:
    """Run the configured mine functions (or those of ``mine_functions``: a list of names or a
    mapping as in the config) and store their results; ``clear=True`` replaces the stored mine
    instead of updating it.  None when no function is configured."""
    if not mine_functions:
        functions = _configured(env)
        if not functions:
            return None
    elif isinstance(mine_functions, list):
        functions = {str(fun): {} for fun in mine_functions}
    elif isinstance(mine_functions, Mapping):
        functions = dict(mine_functions)
    else:
        return None
    from runtime import modules

    data: dict[str, Any] = {}
    for alias, definition in functions.items():
        name, args, kwargs, acl = parse_definition(copy.deepcopy(definition))
        fun = name or str(alias)
        if not _available(env, fun):
            continue
        try:
            result = modules.call(env, fun, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - one failing function does not stop the others (Salt)
            log.error("Function %s in mine.update failed to execute: %s", fun, exc)
            continue
        data[str(alias)] = _wrap(result, acl)
    return _store(env, data, bool(clear))


@runs_command()
def send(env: ModuleEnv, name: str, *args: Any, **kwargs: Any) -> bool:
    """Run one function and store its result under ``name`` (``mine_function=`` names the
    function when ``name`` is an alias; ``allow_tgt=``/``allow_tgt_type=`` restrict who may read
    it); the other arguments go to the function.  False when the function failed."""
    from runtime import modules

    kwargs = {k: v for k, v in kwargs.items() if not k.startswith("__")}
    fun = kwargs.pop("mine_function", None) or name
    acl = {key: value for key in ("allow_tgt", "allow_tgt_type") if (value := kwargs.pop(key, None))}
    try:
        result = modules.call(env, str(fun), list(args), kwargs)
    except Exception as exc:  # noqa: BLE001 - Salt's answer is False, the error is logged
        log.error("Function %s in mine.send failed to execute: %s", fun, exc)
        return False
    return _store(env, {str(name): _wrap(result, acl)}, clear=False)


@reads_host(absent=constant({}))
def get(env: ModuleEnv, tgt: Any, fun: Any, tgt_type: str = "glob", exclude_minion: bool = False) -> dict[str, Any]:
    """What the minions matching tgt stored for fun: ``{minion: data}``, or ``{function: {minion:
    data}}`` when fun is a list or a comma-separated string of several.  Through the master, which
    serves only what its mine_get ACL and each entry's allow_tgt let this minion read."""
    if _masterless(env):
        return _get_local(env, tgt, fun, tgt_type)
    target = [str(t) for t in tgt] if isinstance(tgt, (list, tuple)) else str(tgt)
    funs = [str(f) for f in fun] if isinstance(fun, (list, tuple)) else str(fun)
    reply = _ask(env, protocol.MineGet(tgt=target, fun=funs, tgt_type=str(tgt_type)))
    data = dict(reply.data)
    if exclude_minion and env.opts.get("id") in data:
        del data[env.opts["id"]]
    return data


def _get_local(env: ModuleEnv, tgt: Any, fun: Any, tgt_type: str) -> dict[str, Any]:
    from compiler import match

    minion_id = str(env.opts.get("id") or env.grains.get("id") or "")
    me = match.Minion(minion_id, env.grains, env.pillar)
    try:
        if not match.match_one(str(tgt_type), tgt, me, env.opts.get("nodegroups") or {}):
            return {}
    except match.MatchError as exc:
        from runtime.modules import CommandError

        raise CommandError(str(exc)) from None
    data = _read_local(env)
    if isinstance(fun, str):
        functions = sorted(set(fun.split(",")))
        by_function = len(functions) > 1
    elif isinstance(fun, (list, tuple)):
        functions, by_function = [str(f) for f in fun], True
    else:
        return {}
    out: dict[str, Any] = {}
    for function in functions:
        if function not in data:
            continue
        if by_function:
            out.setdefault(function, {})[minion_id] = _unwrap(data[function])
        else:
            out[minion_id] = _unwrap(data[function])
    return out


@runs_command()
def delete(env: ModuleEnv, fun: str) -> bool:
    """Remove one function's data from this minion's mine."""
    if _masterless(env):
        data = _read_local(env)
        data.pop(str(fun), None)
        return _write_local(env, data)
    _ask(env, protocol.MineDelete(fun=str(fun)))
    return True


@runs_command()
def flush(env: ModuleEnv) -> bool:
    """Remove all of this minion's mine data."""
    if _masterless(env):
        return _write_local(env, {})
    _ask(env, protocol.MineFlush())
    return True


@reads_host(absent=constant(None))
def valid(env: ModuleEnv) -> Any:
    """The configured mine functions whose function exists, in Salt's ``{alias: {function: [args]}}``
    form for aliases (None when none is configured)."""
    functions = _configured(env)
    if not functions:
        return None
    out: dict[str, Any] = {}
    for alias, definition in functions.items():
        name, args, kwargs, _acl = parse_definition(copy.deepcopy(definition))
        if not _available(env, name or str(alias)):
            continue
        out[str(alias)] = {name: args + [{k: v} for k, v in kwargs.items()]} if name else definition
    return out
