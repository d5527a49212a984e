"""The dispatch allow-list classifies every method of the worker (SECURITY.md class 1).

A new public method on ``Worker`` must be added either to a command table
(``CLEAR_COMMANDS``/``AES_COMMANDS``) or to ``NON_HANDLERS``; otherwise this test fails, so
that nobody exposes (or forgets to expose) a handler by accident.
"""

from __future__ import annotations

import inspect
import re

from runtime.master.worker import Worker

SALT_CMD = re.compile(r"^_?[a-z][a-z0-9_]*$")


def public_methods() -> set[str]:
    return {name for name, member in inspect.getmembers(Worker, inspect.isfunction) if not name.startswith("_")}


def test_every_public_method_is_classified() -> None:
    handlers = set(Worker.CLEAR_COMMANDS.values()) | set(Worker.AES_COMMANDS.values())
    unclassified = public_methods() - handlers - Worker.NON_HANDLERS
    assert not unclassified, (f"Worker methods neither in a dispatch table nor in NON_HANDLERS: {sorted(unclassified)}"
                              " (add each to CLEAR_COMMANDS/AES_COMMANDS or NON_HANDLERS)")


def test_the_tables_name_real_methods_and_do_not_overlap() -> None:
    handlers = set(Worker.CLEAR_COMMANDS.values()) | set(Worker.AES_COMMANDS.values())
    for name in handlers | Worker.NON_HANDLERS:
        assert inspect.isfunction(getattr(Worker, name, None)), f"{name} is not a method of Worker"
    assert not handlers & Worker.NON_HANDLERS
    assert not set(Worker.CLEAR_COMMANDS) & set(Worker.AES_COMMANDS), "a command is both clear and sealed"
    assert set(Worker.CLEAR_COMMANDS.values()).isdisjoint(Worker.AES_COMMANDS.values())


def test_commands_are_plain_names_and_handlers_are_not_dunders() -> None:
    for table in (Worker.CLEAR_COMMANDS, Worker.AES_COMMANDS):
        for cmd, name in table.items():
            assert isinstance(cmd, str) and SALT_CMD.match(cmd), cmd
            assert not name.startswith("_"), f"{cmd} dispatches to a private method {name}"
    # only _auth is reachable without a session or a client proof
    assert set(Worker.CLEAR_COMMANDS) == {"_auth", "publish", "job_returns"}


def test_the_tables_cannot_be_changed_at_run_time() -> None:
    for table in (Worker.CLEAR_COMMANDS, Worker.AES_COMMANDS):
        try:
            table["__init__"] = "close"  # type: ignore[index]
        except TypeError:
            continue
        raise AssertionError("a dispatch table is mutable")


def test_handlers_take_the_session_id_not_the_load_id() -> None:
    # every aes handler's first parameter is the minion id the worker takes from the session
    for name in Worker.AES_COMMANDS.values():
        params = list(inspect.signature(getattr(Worker, name)).parameters)
        assert params[:3] == ["self", "minion_id", "load"], (name, params)
    for name in Worker.CLEAR_COMMANDS.values():
        params = list(inspect.signature(getattr(Worker, name)).parameters)
        assert params[:3] == ["self", "peer", "load"], (name, params)
