"""The master's request handlers, one module per concern, each a class whose ``HANDLES`` table
maps the ``runtime.protocol`` request classes it answers to its methods.

    context.py      WorkerContext: what every handler shares (stores, caches, sockets); Refused
    keys.py         _auth, _heartbeat, _publish_key: sessions and the publish key
    jobs.py         publish, job_returns (local clients), _return (minions): jobs and their returns
    minion_data.py  _pillar, _grains: what the master keeps about each minion
    events.py       _minion_event: minions' events on the master's bus
    files.py        _file_envs, _file_list, _dir_list, _file_find, _file_hash, _serve_file (minions);
                    fileserver_update (the master's user: fetch the git remotes now)

A clear handler is called ``(peer, message)``, a session handler ``(minion_id, message)`` with
the id bound to the session; each returns its request's reply class, or raises ``Refused``
(answered with an error reply).  ``_return`` has a second entry for the returns a worker is
handed together (``JobHandlers.job_return_many``: one commit for all of them), and a worker tells
``MinionDataHandlers.read_ahead`` the session requests of a batch before answering them (the
stored grains and pillar of all its ``_pillar`` requests' minions: one read).
``runtime.master.worker`` dispatches to them; tests fail when a request class has no handler, a
handler no request class, or a public method is unclassified (tests/security/test_allowlist.py,
tests/unit/test_protocol.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from runtime import protocol
from runtime.master.handlers.context import Refused, WorkerContext
from runtime.master.handlers.events import EventHandlers
from runtime.master.handlers.files import FileHandlers
from runtime.master.handlers.jobs import JobHandlers
from runtime.master.handlers.keys import KeyHandlers
from runtime.master.handlers.minion_data import MinionDataHandlers

Handler = Callable[[str, Any], protocol.Reply]

HANDLER_CLASSES: tuple[type[KeyHandlers | JobHandlers | MinionDataHandlers | EventHandlers | FileHandlers], ...] = (
    KeyHandlers, JobHandlers, MinionDataHandlers, EventHandlers, FileHandlers)


ReturnsHandler = Callable[[Sequence[tuple[str, protocol.JobReturn]]], list[Exception | None]]
ReadAhead = Callable[[Sequence[tuple[str, protocol.Request[Any]]]], None]

# Session requests whose handlers never read the job cache: minions' returns handed to a worker
# before one of these may be stored after it is answered, together with later returns (one commit).
SEES_NO_RETURNS: frozenset[type[protocol.Request[Any]]] = frozenset({
    protocol.PillarRequest, protocol.GrainsUpload, protocol.Heartbeat})


@dataclass(frozen=True)
class HandlerTable:
    single: Mapping[type[protocol.Request[Any]], Handler]   # request class -> bound handler (read-only)
    returns: ReturnsHandler                                   # several minions' _return at once
    read_ahead: ReadAhead                                     # told a batch's session requests before they are answered


def handler_table(ctx: WorkerContext) -> HandlerTable:
    """The bound handlers, built only from the ``HANDLES`` tables."""
    table: dict[type[protocol.Request[Any]], Handler] = {}
    returns: ReturnsHandler | None = None
    read_ahead: ReadAhead | None = None
    for cls in HANDLER_CLASSES:
        handlers = cls(ctx)
        for request, name in cls.HANDLES.items():
            if request in table:
                raise RuntimeError(f"{request.__name__} has two handlers")
            table[request] = getattr(handlers, name)
        if isinstance(handlers, JobHandlers):
            returns = handlers.job_return_many
        if isinstance(handlers, MinionDataHandlers):
            read_ahead = handlers.read_ahead
    assert returns is not None and read_ahead is not None, "JobHandlers and MinionDataHandlers are HANDLER_CLASSES"
    return HandlerTable(MappingProxyType(table), returns, read_ahead)


__all__ = ["HANDLER_CLASSES", "SEES_NO_RETURNS", "Handler", "HandlerTable", "ReadAhead", "Refused", "ReturnsHandler",
           "WorkerContext", "handler_table"]
