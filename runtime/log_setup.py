"""Logging for every command and daemon: log_file at log_level, -l on the command line."""

from __future__ import annotations

import logging
import os
from typing import Any

LEVELS = {
    "all": logging.NOTSET, "garbage": logging.DEBUG, "trace": logging.DEBUG, "debug": logging.DEBUG,
    "profile": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
    "critical": logging.CRITICAL, "quiet": logging.CRITICAL + 10,
}
FORMAT = "%(asctime)s [%(name)-24s][%(levelname)-8s][%(process)d] %(message)s"
CONSOLE_FORMAT = "[%(levelname)-8s] %(message)s"   # a command's stderr, as Salt's CLIs print log records


class LogFileError(Exception):
    """The log file cannot be opened (the message names it and says why)."""


def level_of(name: Any) -> int:
    return LEVELS.get(str(name).lower(), logging.WARNING)


def setup(level: str = "warning", log_file: str | None = None, *, file_level: str | None = None,
          console: bool = False) -> None:
    """Configure the root logger: stderr, or log_file (0600) when given (at ``file_level``, else
    ``level``), and stderr as well with ``console`` (daemons: what a foreground run or the
    journal shows)."""
    import logging.handlers  # here: a command's parser reads LEVELS without it

    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    formatter = logging.Formatter(FORMAT)
    levels = []
    if log_file:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
            fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.close(fd)
            # reopened when logrotate moves the file away (as Salt's log file handler)
            handler: logging.Handler = logging.handlers.WatchedFileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise LogFileError(f"cannot open log_file {log_file}: {exc.strerror} (set log_file, or root_dir, "
                               "in the config)") from None
        handler.setLevel(level_of(file_level or level))
        handler.setFormatter(formatter)
        root.addHandler(handler)
        levels.append(handler.level)
    if console or not log_file:
        stream = logging.StreamHandler()
        stream.setLevel(level_of(level))
        stream.setFormatter(formatter if log_file else logging.Formatter(CONSOLE_FORMAT))
        root.addHandler(stream)
        levels.append(stream.level)
    root.setLevel(min(levels))


def setup_daemon(opts: dict[str, Any]) -> None:
    """A daemon's logging from its opts: log_file at log_level_logfile (or log_level), stderr at
    log_level.  Raises LogFileError."""
    setup(opts.get("log_level") or "warning", opts.get("log_file"), file_level=opts.get("log_level_logfile"),
          console=True)


def cannot_start(role: str, exc: BaseException, log: logging.Logger) -> int:
    """Report why a daemon cannot start (stderr and its log); 2, its exit status."""
    import sys

    print(f"saltpan {role}: {exc}", file=sys.stderr)
    # and in the log file (not again on stderr, where a daemon's log records go too)
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "cannot start: %s", (exc,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    return 2
