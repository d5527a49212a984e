"""State modules (the list and what is known about each: ``runtime/states/registry.py``).

Interface (what the executor relies on)
---------------------------------------
Each module ``runtime/states/<mod>.py`` exposes its state functions as plain
functions ``fun(ctx: StateContext, name: str, **kwargs) -> dict`` returning
Salt's result shape::

    {"name": name, "result": True | False | None, "changes": {...}, "comment": "..."}

* ``result`` is ``None`` only in test mode when something would change
  (``changes`` then holds the predicted changes), ``True`` on success,
  ``False`` on failure.
* A module may expose ``mod_watch(ctx, name, sfun=<the watching function>, **kwargs)``;
  the executor calls it when a ``watch``/``listen`` target changed.
* Functions must honour ``ctx.test`` (never touch the system in test mode) and
  write files atomically (temp file in the same directory + rename).
* Unknown keyword arguments (requisites, ``order``, ``__id__`` ...) are already
  stripped by the executor; functions still accept ``**kwargs`` and ignore
  what they do not know.

``lookup``/``resolve`` (from the registry) find a function, importing its module lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.states.registry import REGISTRY, Missing, StateFunction, has_mod_watch, lookup, resolve

__all__ = ["REGISTRY", "Missing", "StateContext", "StateFunction", "has_mod_watch", "lookup", "resolve"]


@dataclass
class StateContext:
    """What a state function may use. Built by the executor for each run."""

    test: bool = False
    opts: Mapping[str, Any] = field(default_factory=dict)
    grains: Mapping[str, Any] = field(default_factory=dict)
    pillar: Mapping[str, Any] = field(default_factory=dict)
    saltenv: str = "base"
    sls: str | None = None
    # fetch_file(url, saltenv) -> (text_or_bytes, display_path, mode_or_None) or None when missing
    fetch_file: Callable[[str, str], tuple[bytes, str, int | None] | None] | None = None
    # list_files(saltenv) -> every file path of the file server's tree ("a/b.conf"), for file.recurse
    list_files: Callable[[str], Sequence[str]] | None = None
    # render_template(text, engine, context, display) -> str  (engine: "jinja"); context holds the
    # state's defaults+context; the renderer adds grains/pillar/salt/opts/saltenv/sls and, like
    # Salt's, keeps a template's final newline (jinja2 itself drops it)
    render_template: Callable[[str, str, Mapping[str, Any], str], str] | None = None
    # fire_event(tag, data): the minion's event bus (to the master when connected); None in a run
    # without one (a masterless call)
    fire_event: Callable[[str, Mapping[str, Any]], Any] | None = None
    # execution-module function table (cmd.run, ...), for states that call modules
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    # the low chunk being run, requisites included (file.directory's clean reads ``require``)
    low: Mapping[str, Any] = field(default_factory=dict)
    # every low chunk of the run (file.directory's clean keeps files named by required states)
    lowstate: Sequence[Mapping[str, Any]] = ()
    # for mod_watch: "state: __id__" of each watched requisite that reported changes
    # (test.mod_watch reports them under the changes key "Requisites with changes")
    watch_changes: Sequence[str] = ()
