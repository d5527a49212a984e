"""The ``event`` state module: ``send`` (fire an event), ``wait`` (fire it only through a
``watch``: ``mod_watch`` is ``send``).

Events go where the run's ``fire_event`` sends them: the minion's event bus, forwarded to the
master, as Salt's ``event.send``. A masterless run has no bus: the state still succeeds (Salt's
masterless ``event.send`` fires into a local bus nobody listens to) and says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["fire_master", "mod_watch", "send", "wait"]


def _payload(ctx: StateContext, data: Any, preload: Any, with_env: Any, with_grains: Any,
             with_pillar: Any) -> dict[str, Any]:
    """Salt's event.send data: preload, then environ/grains/pillar as asked, then data."""
    out: dict[str, Any] = dict(preload) if isinstance(preload, Mapping) else {}
    if with_env:
        env = dict(os.environ)
        out["environ"] = {k: env[k] for k in with_env if k in env} if isinstance(with_env, list) else env
    for key, flag, source in (("grains", with_grains, ctx.grains), ("pillar", with_pillar, ctx.pillar)):
        if flag:
            out[key] = {k: source[k] for k in flag if k in source} if isinstance(flag, list) else dict(source)
    if isinstance(data, Mapping):
        out.update(data)
    elif data is not None:
        out["data"] = data
    return out


def send(ctx: StateContext, name: str, data: Any = None, preload: Any = None, with_env: Any = False,
         with_grains: Any = False, with_pillar: Any = False, show_changed: Any = True,
         **kwargs: Any) -> dict[str, Any]:
    """Fire the event ``name`` (the tag) with ``data``."""
    ret: dict[str, Any] = {"name": name, "changes": {"tag": name, "data": data} if show_changed else {},
                           "result": False, "comment": ""}
    if ctx.test:
        return dict(ret, result=None, comment="Event would have been fired")
    payload = _payload(ctx, data, preload, with_env, with_grains, with_pillar)
    if ctx.fire_event is None:
        return dict(ret, result=True, comment="Event fired (this run has no event bus: nothing received it)")
    try:
        ctx.fire_event(name, payload)
    except Exception as exc:  # noqa: BLE001 - the bus refusing the event is this state's failure
        return dict(ret, comment=f"Event not fired: {exc}")
    return dict(ret, result=True, comment="Event fired")


fire_master = send


def wait(ctx: StateContext, name: str, sfun: Any = None, data: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Do nothing; the event is fired through ``mod_watch`` when a watched state changed."""
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def mod_watch(ctx: StateContext, name: str, sfun: Any = None, **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: fire the event."""
    return send(ctx, name, **kwargs)
