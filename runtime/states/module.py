"""The ``module`` state module: call execution functions from a state (``run``, ``wait``, ``mod_watch``).

Both syntaxes Salt 3008 accepts, told apart as Salt does (any argument without a dot means
the legacy one):

* new style: the functions are the argument names, their value the argument list (mappings
  in it are keyword arguments)::

      reload-pg:
        module.run:
          - service.reload:
            - name: postgresql

* legacy: ``name`` is the function; its arguments are given by name, with ``m_name``,
  ``m_fun``, ``m_names``, ``m_state``, ``m_saltenv`` standing for ``name``, ``fun`` ...
  (which the state itself uses), ``args`` for ``*args`` and ``kwargs`` for ``**kwargs``::

      reload-pg:
        module.wait:
          - name: service.reload
          - m_name: postgresql

Functions come from ``StateContext.functions``, the execution-function table of the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["mod_watch", "run", "wait", "watch"]

_IGNORED = ("name", "__reqs__", "sfun")
# legacy syntax: the state's own argument names stand in for these function parameters
_RENAMED = {"name": "m_name", "fun": "m_fun", "names": "m_names", "state": "m_state", "saltenv": "m_saltenv"}


def wait(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Do nothing now; the function runs through ``mod_watch`` when a watched state changed."""
    return {"name": name, "changes": {}, "result": True, "comment": ""}


watch = wait


def _is_legacy(kwargs: Mapping[str, Any]) -> bool:
    keys = [key for key in kwargs if key not in _IGNORED]
    return any("." not in key for key in keys) or (not keys and bool(kwargs))


def run(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Call execution functions (new-style: one per argument; legacy: the function ``name``)."""
    if _is_legacy({"name": name, **kwargs}):
        return _legacy_run(ctx, name, kwargs)
    return _new_run(ctx, kwargs)


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: call the function(s), as ``run`` does."""
    return run(ctx, name, **kwargs)


def result_of(value: Any) -> bool:
    """Salt's reading of a function's return: False, or a mapping holding ``result: False`` or a
    non-zero ``retcode`` (at any depth), means failure."""
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        for key, val in value.items():
            if (key == "result" and val is False) or (key == "retcode" and val != 0):
                return False
            if isinstance(val, Mapping) and not result_of(val):
                return False
    return True


def _split_args(func_args: Any) -> tuple[list[Any], dict[str, Any]]:
    if func_args is None:
        return [], {}
    if isinstance(func_args, Mapping):
        return [], dict(func_args)
    if not isinstance(func_args, list):
        return [func_args], {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for item in func_args:
        if isinstance(item, Mapping):
            kwargs.update(item)
        else:
            args.append(item)
    return args, kwargs


def _new_run(ctx: StateContext, kwargs: dict[str, Any]) -> dict[str, Any]:
    functions = [key for key in kwargs if "." in key]
    ret: dict[str, Any] = {"name": functions, "changes": {}, "comment": "", "result": None}
    if not functions:
        ret.update(comment="No function provided.", result=False)
        return ret
    missing = [f for f in functions if f.split(":")[0] not in ctx.functions]
    tests = [f.split(":")[0] for f in functions if f not in missing] if ctx.test else []
    if missing or tests:
        parts = []
        if missing:
            parts.append(f"Unavailable function{'s' if len(missing) > 1 else ''}: {', '.join(missing)}.")
        if tests:
            parts.append(f"Function{'s' if len(tests) > 1 else ''} {', '.join(tests)} to be executed.")
        ret["comment"] = " ".join(parts)
        if missing:
            ret["result"] = False
        return ret
    failures, success = [], []
    for func in functions:
        args, kw = _split_args(kwargs[func])
        try:
            value = ctx.functions[func.split(":")[0]](*args, **kw)
        except Exception as exc:  # noqa: BLE001 - a failing function is this state's failure
            failures.append(f"'{func}' failed: {exc}")
            continue
        if not result_of(value):
            if isinstance(value, Mapping):
                failures.append(f"'{func}' failed: {value.get('comment', '(error message N/A)')}")
            if value is False:
                failures.append(f"'{func}': {value}")
        else:
            comment = value.get("comment", "Success") if isinstance(value, Mapping) else value
            success.append(f"{func}: {comment}")
            ret["changes"][func] = value
    ret["comment"] = ", ".join(failures + success)
    ret["result"] = not failures
    return ret


def _signature_params(func: Callable[..., Any], module_function: bool = False) -> list[inspect.Parameter] | None:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    # "_"-names belong to a wrapper, not the function
    params = [p for p in params if not p.name.startswith("_")]
    if module_function and params:  # an execution module function: its first parameter is the ModuleEnv
        params = params[1:]
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    return params


def _parameters(name: str, func: Callable[..., Any]) -> list[inspect.Parameter] | None:
    """The function's parameters as a caller sees them, or None when they cannot be told (the run's
    table may hold a wrapper: then the execution module's own function tells)."""
    params = _signature_params(func)
    if params is not None:
        return params
    from runtime import modules

    try:
        return _signature_params(modules.lookup(name), module_function=True)
    except modules.CommandError:
        return None


def _legacy_run(ctx: StateContext, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    ret: dict[str, Any] = {"name": name, "changes": {}, "comment": "", "result": None}
    kwargs = {k: v for k, v in kwargs.items() if k not in _IGNORED}
    func = ctx.functions.get(name) if isinstance(ctx.functions, Mapping) else None
    if func is None:
        ret.update(comment=f"Module function {name} is not available", result=False)
        return ret
    if ctx.test:
        ret["comment"] = f"Module function {name} is set to execute"
        return ret
    call = _legacy_call(_parameters(name, func), kwargs)
    if isinstance(call, str):
        ret.update(comment=call, result=False)
        return ret
    args, call_kwargs = call
    try:
        value = func(*args, **call_kwargs)
    except Exception as exc:  # noqa: BLE001
        ret.update(comment=f"Module function {name} threw an exception. Exception: {exc}", result=False)
        return ret
    ret["changes"]["ret"] = value
    ret["comment"] = f"Module function {name} executed"
    ret["result"] = result_of(value)
    return ret


def _legacy_call(params: list[inspect.Parameter] | None,
                 kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]] | str:
    """(args, kwargs) for a function with these parameters from the state's arguments, or what is
    wrong."""
    if params is None:  # no signature to map onto: pass every argument by its (real) name
        plain = {({v: k for k, v in _RENAMED.items()}.get(k, k)): v for k, v in kwargs.items()
                 if k not in ("args", "kwargs")}
        extra = kwargs.get("kwargs") or {}
        if not isinstance(extra, Mapping):
            return "'kwargs' must be a dict."
        varargs = kwargs.get("args") or []
        if not isinstance(varargs, list):
            return "'args' must be a list."
        return list(varargs), {**plain, **extra}
    args: list[Any] = []
    call_kwargs: dict[str, Any] = {}
    missing = []
    for param in params:
        key = _RENAMED.get(param.name, param.name)
        if param.kind == param.VAR_POSITIONAL:
            if key in kwargs:
                if not isinstance(kwargs[key], list):
                    return f"'{param.name}' must be a list."
                args.extend(kwargs[key])
        elif param.kind == param.VAR_KEYWORD:
            if key in kwargs:
                if not isinstance(kwargs[key], Mapping):
                    return f"'{param.name}' must be a dict."
                call_kwargs.update(kwargs[key])
        elif key in kwargs:
            if param.kind == param.KEYWORD_ONLY:
                call_kwargs[param.name] = kwargs[key]
            else:
                args.append(kwargs[key])
        elif param.default is param.empty:
            missing.append(key)
        elif param.kind != param.KEYWORD_ONLY:
            args.append(param.default)
    if missing:
        return "The following arguments are missing: " + " ".join(missing)
    return args, call_kwargs
