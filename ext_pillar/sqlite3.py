"""ext_pillar sqlite3: pillar rows from an SQLite database (Salt's sql_base query rules).

    sqlite3:                          # top-level config section, as Salt reads it
      database: /var/lib/salt/pillar.db
      timeout: 5.0                    # seconds to wait for a locked database

    ext_pillar:
      - sqlite3:
          - "SELECT key, value FROM pillar WHERE minion = ?"
      - sqlite3:
          network:
            query: "SELECT iface, addr FROM addresses WHERE minion = ?"
            as_list: true

The database is opened read-only and must exist.  A relative ``database``
resolves against the directory of the config file.  See ``sql_base`` for the
query options and how rows nest.
"""

from __future__ import annotations

import os
import sqlite3 as sqlite
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ext_pillar import _deadline, sql_base
from ext_pillar._errors import DriverError

DEFAULTS = {"database": "/var/lib/salt/pillar.db", "timeout": 5.0}


def settings(opts: Mapping[str, Any]) -> dict[str, Any]:
    """Connection settings: the ``sqlite3:`` section (Salt reads it when it has ``database``),
    else the dotted keys ``sqlite3.database`` / ``sqlite3.timeout``, else the defaults."""
    section = opts.get("sqlite3")
    out = dict(DEFAULTS)
    if isinstance(section, Mapping) and "database" in section:
        out.update({k: section[k] for k in DEFAULTS if k in section})
    else:
        out.update({k: opts[f"sqlite3.{k}"] for k in DEFAULTS if f"sqlite3.{k}" in opts})
    database = out["database"]
    if not isinstance(database, str) or not database:
        raise DriverError(f"sqlite3: database must be a path, got {database!r}")
    if not os.path.isabs(database) and opts.get("conf_file"):
        database = os.path.join(os.path.dirname(str(opts["conf_file"])), database)
    out["database"] = os.path.normpath(database)
    timeout = out["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise DriverError(f"sqlite3: timeout must be a number of seconds, got {timeout!r}")
    return out


@contextmanager
def _cursor(database: str, busy_timeout: float) -> Iterator[Any]:
    if not os.path.isfile(database):
        raise DriverError(f"SQLite database {database} does not exist (set `sqlite3: {{database: PATH}}` "
                          "in the config)")
    uri = "file:" + urllib.parse.quote(database) + "?mode=ro"
    try:
        conn = sqlite.connect(uri, uri=True, timeout=_deadline.bounded(busy_timeout) or 0.0,
                              check_same_thread=False)
    except sqlite.Error as exc:
        raise DriverError(f"cannot open SQLite database {database}: {exc}") from None
    # stop a long query once the call's deadline has passed (the query then fails with "interrupted")
    conn.set_progress_handler(lambda: 1 if _deadline.expired() else 0, 10000)
    try:
        yield conn.cursor()
    finally:
        conn.close()


def _describe(exc: Exception) -> str | None:
    if not isinstance(exc, sqlite.Error):
        return None
    text = str(exc)
    if "interrupted" in text and _deadline.expired():
        return "interrupted: ext_pillar_timeout passed"
    if "Incorrect number of bindings" in text:
        return f"{text} (the query must use the minion id placeholder ? exactly once)"
    return text


def ext_pillar(minion_id: str, pillar: dict, *args: Any, opts: Mapping[str, Any] | None = None,
               **kwargs: Any) -> dict[str, Any]:
    conf = settings(opts or {})
    return sql_base.fetch(lambda: _cursor(conf["database"], float(conf["timeout"])), minion_id, args, kwargs,
                          "SQLite3", _describe)
