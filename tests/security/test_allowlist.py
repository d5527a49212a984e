"""The dispatch allow-list classifies every request and every handler method (SECURITY.md class 1).

Every request class of ``runtime.protocol`` has exactly one handler, declared in the ``HANDLES``
table of one handler class; every public method of a handler class is a handler or listed in its
``NON_HANDLERS``; otherwise these tests fail, so that nobody exposes (or forgets to expose) a
handler by accident.
"""

from __future__ import annotations

import inspect
import re
import typing

from runtime import protocol
from runtime.master.worker import HANDLER_CLASSES

SALT_CMD = re.compile(r"^_?[a-z][a-z0-9_]*$")


def public_methods(cls: type) -> set[str]:
    return {name for name, member in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def handled() -> dict[type, tuple[type, str]]:
    """request class -> (handler class, method name), failing on a request handled twice."""
    out: dict[type, tuple[type, str]] = {}
    for cls in HANDLER_CLASSES:
        for request, name in cls.HANDLES.items():
            assert request not in out, f"{request.__name__} is handled by {out[request]} and {cls.__name__}.{name}"
            out[request] = (cls, name)
    return out


def test_every_request_has_one_handler_and_every_handler_a_request() -> None:
    table = handled()
    assert set(table) == set(protocol.REQUESTS), (
        f"requests without a handler: {sorted(r.__name__ for r in set(protocol.REQUESTS) - set(table))}; "
        f"handlers of no request class of runtime.protocol: {sorted(r.__name__ for r in set(table) - set(protocol.REQUESTS))}")


def test_every_public_method_is_classified() -> None:
    for cls in HANDLER_CLASSES:
        handlers = set(cls.HANDLES.values())
        unclassified = public_methods(cls) - handlers - cls.NON_HANDLERS
        assert not unclassified, (f"{cls.__name__} methods neither in HANDLES nor in NON_HANDLERS: "
                                  f"{sorted(unclassified)}")
        for name in handlers | cls.NON_HANDLERS:
            assert inspect.isfunction(getattr(cls, name, None)), f"{name} is not a method of {cls.__name__}"
        assert not handlers & cls.NON_HANDLERS


def test_commands_are_plain_names_and_handlers_are_not_dunders() -> None:
    for request, (cls, name) in handled().items():
        assert isinstance(request.COMMAND, str) and SALT_CMD.match(request.COMMAND), request.COMMAND
        assert not name.startswith("_"), f"{request.COMMAND} dispatches to a private method {cls.__name__}.{name}"
    # only _auth is reachable without a session or a client proof
    assert set(protocol.CLEAR_COMMANDS) == {"_auth", "publish", "job_returns", "fileserver_update"}
    assert {c for c, r in protocol.COMMANDS.items() if r.CLASS is protocol.MessageClass.AUTH} == {"_auth"}


def test_the_tables_cannot_be_changed_at_run_time() -> None:
    for table in (protocol.COMMANDS, protocol.CLEAR_COMMANDS, protocol.SESSION_COMMANDS,
                  *(cls.HANDLES for cls in HANDLER_CLASSES)):
        try:
            table["__init__"] = protocol.Heartbeat  # type: ignore[index]
        except TypeError:
            continue
        raise AssertionError("a dispatch table is mutable")


def test_handlers_take_the_session_id_and_their_message_class() -> None:
    # a session handler's first parameter is the minion id the worker takes from the session, a
    # clear handler's the peer; the second is typed with the one message class it handles
    for request, (cls, name) in handled().items():
        method = getattr(cls, name)
        params = list(inspect.signature(method).parameters)
        first = "minion_id" if request.CLASS is protocol.MessageClass.SESSION else "peer"
        assert params[:2] == ["self", first] and len(params) == 3, (name, params)
        hints = typing.get_type_hints(method)
        assert hints[params[2]] is request, f"{cls.__name__}.{name} takes {hints[params[2]]}, not {request.__name__}"
        returns = typing.get_args(hints["return"]) or (hints["return"],)
        assert request.REPLY in returns, f"{cls.__name__}.{name} does not return {request.REPLY.__name__}"
