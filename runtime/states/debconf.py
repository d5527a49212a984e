"""The ``debconf`` state module (Salt's ``debconfmod``): answers to packages' debconf questions.

``set`` reads the current answers with ``debconf-get-selections`` (package debconf-utils; without
it the module is unavailable, as in Salt: "debconf module could not be loaded") and writes the
ones that differ with ``debconf-set-selections``. ``set_file`` loads a selections file (a
template with ``template``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _source as S

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["set", "set_file"]

_LINE = re.compile(r"(?ms)^(?P<package>[^#]\S+)[\t ]+(?P<question>\S+)[\t ]+(?P<type>\S+)[\t ]+(?P<value>[^\n]*)$")


def unavailable() -> str | None:
    if shutil.which("debconf-get-selections") is None or shutil.which("debconf-set-selections") is None:
        return "debconf module could not be loaded"
    return None


def selections(package: str) -> list[list[str]] | None:
    """[[question, type, value], ...] of one package (None when debconf does not know it)."""
    out = cmdrun.run(["debconf-get-selections"], cwd="/").stdout
    found = [[m["question"], m["type"], m["value"]] for m in _LINE.finditer(out) if m["package"] == package]
    return found or None


def _set_selections(text: str) -> cmdrun.CommandResult:
    with tempfile.NamedTemporaryFile("w", prefix="saltpan-debconf-", suffix=".txt", delete=False) as handle:
        handle.write(text)
        path = handle.name
    try:
        return cmdrun.run(["debconf-set-selections", path], cwd="/")
    finally:
        os.unlink(path)


def set(ctx: StateContext, name: str, data: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: A001 - Salt's name
    """Package ``name``'s questions have these answers: ``data: {question: {type, value}}``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "type" in v and "value" in v
                                             for v in data.values()):
        ret.update(result=False, comment="data must map each question to {type: ..., value: ...}")
        return ret
    current = selections(name)
    for key, args in data.items():
        kind = str(args["type"])
        value = ("true" if args["value"] else "false") if kind == "boolean" else args["value"]
        if current is not None and [key, kind, str(value)] in current:
            ret["comment"] = (ret["comment"] or "Unchanged answers: ") + f"{key} "
            continue
        if ctx.test:
            ret["result"] = None
            ret["changes"][key] = f"New value: {value}"
            continue
        res = _set_selections(f"{name} {key} {kind} {value}\n")
        if res.retcode == 0:
            ret["changes"][key] = "(password hidden)" if kind == "password" else f"{value}"
        else:
            ret["result"] = False
            ret["comment"] = "Some settings failed to be applied."
            ret["changes"][key] = "Failed to set!"
    if not ret["changes"]:
        ret["comment"] = "All specified answers are already set"
    return ret


def set_file(ctx: StateContext, name: str, source: str, template: Any = None, context: Any = None,
             defaults: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Load the selections file ``source`` (rendered with ``template``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if context is not None and not isinstance(context, dict):
        return dict(ret, result=False, comment="Context must be formed as a dict")
    if defaults is not None and not isinstance(defaults, dict):
        return dict(ret, result=False, comment="Defaults must be formed as a dict")
    if ctx.test:
        return dict(ret, result=None, comment="Debconf selections would have been set.")
    try:
        fetched = S.fetch(ctx, source)
        if fetched is None:
            return dict(ret, result=False, comment="Unable to set debconf selections from file.")
        text = fetched.data.decode("utf-8", errors="replace")
        if template:
            text = S.render(ctx, text, template, context, defaults, source)
    except S.SourceError as exc:
        return dict(ret, result=False, comment=str(exc))
    if _set_selections(text).retcode != 0:
        return dict(ret, result=False, comment="Unable to set debconf selections from file.")
    return dict(ret, comment="Debconf selections were set.")
