"""The ``test`` state module: states that pretend, for trying out requisites and output."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = [
    "check_pillar",
    "configurable_test_state",
    "fail_with_changes",
    "fail_without_changes",
    "mod_watch",
    "nop",
    "show_notification",
    "succeed_with_changes",
    "succeed_without_changes",
]


def _pretend_change() -> dict[str, Any]:
    return {"testing": {"old": "Unchanged", "new": "Something pretended to change"}}


def nop(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Do nothing, successfully (any argument is accepted)."""
    return succeed_without_changes(ctx, name)


def succeed_without_changes(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": kwargs.get("comment", "Success!")}


def fail_without_changes(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Fail, also in test mode."""
    comment = kwargs.get("comment", "Failure!")
    if ctx.test:
        comment = "If we weren't testing, this would be a failure!"
    return {"name": name, "changes": {}, "result": False, "comment": comment}


def succeed_with_changes(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    ret = {"name": name, "changes": _pretend_change(), "result": True,
           "comment": kwargs.get("comment", "Success!")}
    if ctx.test:
        ret["result"] = None
        ret["comment"] = "If we weren't testing, this would be successful with changes"
    return ret


def fail_with_changes(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Fail with changes (result None in test mode, as Salt does)."""
    ret = {"name": name, "changes": _pretend_change(), "result": False,
           "comment": kwargs.get("comment", "Failure!")}
    if ctx.test:
        ret["result"] = None
        ret["comment"] = "If we weren't testing, this would be failed with changes"
    return ret


def configurable_test_state(
    ctx: StateContext,
    name: str,
    changes: Any = True,
    result: Any = True,
    comment: str = "",
    warnings: Any = None,
    allow_test_mode_failure: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """A state whose changes (True/False/'Random'), result (True/False/'Random') and comment are given."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": False, "comment": comment}
    if changes is True:
        ret["changes"] = _pretend_change()
    elif changes is False:
        pass
    elif str(changes).lower() == "random":
        if random.choice((True, False)):
            ret["changes"] = _pretend_change()
    else:
        ret["comment"] = ("You have specified the state option 'changes' with invalid arguments. "
                          "It must be either True, False, or 'Random'")
        return ret
    if isinstance(result, bool):
        ret["result"] = result
    elif str(result).lower() == "random":
        ret["result"] = random.choice((True, False))
    else:
        ret["result"] = False
        ret["comment"] = ("You have specified the state option 'result' with invalid arguments. "
                          "It must be either True, False, or 'Random'")
        return ret
    if isinstance(warnings, str):
        ret["warnings"] = [warnings]
    elif isinstance(warnings, list):
        ret["warnings"] = warnings
    elif warnings is not None:
        ret["result"] = False
        ret["comment"] = ("You have specified the state option 'warnings' with invalid arguments. "
                          "It must be a string or a list of strings")
        return ret
    if ctx.test:
        if allow_test_mode_failure and result is False:
            ret["result"] = False
        else:
            ret["result"] = True if changes is False else None
        ret["comment"] = comment or "This is a test"
    return ret


def show_notification(ctx: StateContext, name: str, text: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Show ``text`` as the comment; nothing changes."""
    if not text:
        return {"name": name, "changes": {}, "result": False, "comment": "Missing required argument text."}
    return {"name": name, "changes": {}, "result": True, "comment": text}


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Fired when a watched state changed: lists the watched states that reported changes.

    As in Salt, the watching state's own ``result``/``comment``/``changes`` arguments
    override the defaults.
    """
    return {
        "name": name,
        "result": kwargs.get("result", True),
        "comment": kwargs.get("comment", "Watch statement fired."),
        "changes": kwargs.get("changes", {"Requisites with changes": list(ctx.watch_changes)}),
    }


_TYPES: dict[str, Any] = {"present": None, "boolean": bool, "integer": int, "string": str,
                          "listing": list, "dictionary": dict}


def check_pillar(ctx: StateContext, name: str, verbose: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Fail when pillar keys are missing or of the wrong type (present/boolean/integer/...)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if not any(kwargs.get(kind) for kind in _TYPES):
        return {**ret, "result": False, "comment": "Missing required argument text."}
    failed: dict[str, Any] = {}
    fine: dict[str, Any] = {}
    for kind, wanted in _TYPES.items():
        keys = kwargs.get(kind) or []
        for key in [keys] if isinstance(keys, str) else keys:
            value = _traverse(ctx.pillar, str(key))
            if value is None:
                failed[key] = None
            elif wanted is not None and (not isinstance(value, wanted) or (wanted is int and isinstance(value, bool))):
                failed[key] = wanted
            elif verbose:
                fine[key] = wanted
    for key, wanted in failed.items():
        ret["result"] = False
        ret["comment"] += f'Pillar key "{key}" ' + ("is missing.\n" if wanted is None else f"is not {wanted}.\n")
    if verbose and fine:
        ret["comment"] += "Those keys passed the check:\n" + "".join(f"- {k} ({t})\n" for k, t in fine.items())
    return ret


def _traverse(data: Any, key: str) -> Any:
    for part in key.split(":"):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        else:
            return None
    return data
