"""Logging for every command and daemon: log_file at log_level, -l on the command line."""

from __future__ import annotations

import logging
import os

LEVELS = {
    "all": logging.NOTSET, "garbage": logging.DEBUG, "trace": logging.DEBUG, "debug": logging.DEBUG,
    "profile": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
    "critical": logging.CRITICAL, "quiet": logging.CRITICAL + 10,
}
FORMAT = "%(asctime)s [%(name)-24s][%(levelname)-8s][%(process)d] %(message)s"


def setup(level: str = "warning", log_file: str | None = None) -> None:
    """Configure the root logger once: stderr, or log_file (0600) when given."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if log_file:
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.close(fd)
        handler: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(LEVELS.get(str(level).lower(), logging.WARNING))
