"""ext_pillar postgres: pillar rows from PostgreSQL (Salt's sql_base query rules), through psycopg 3.

    postgres:                         # top-level config section, as Salt reads it
      host: db.example.com            # default localhost
      port: 5432                      # default 5432
      user: salt                      # default salt
      pass: secret                    # default salt
      db: salt                        # default salt

    ext_pillar:
      - postgres:
          fromdb:
            query: "SELECT role, setting, value FROM settings WHERE minion LIKE %s"
            depth: 2

Install the client with ``pip install 'saltpan[postgres]'``.  Each compile
opens one read-only connection; connecting and every query are bounded by the
call's ``ext_pillar_timeout``.  See ``sql_base`` for the query options.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ext_pillar import _deadline, sql_base
from ext_pillar._errors import DriverError

DEFAULTS: dict[str, Any] = {"host": "localhost", "user": "salt", "pass": "salt", "db": "salt", "port": 5432}


def settings(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The ``postgres:`` config section over Salt's defaults."""
    section = opts.get("postgres") or {}
    if not isinstance(section, Mapping):
        raise DriverError(f"the postgres config section must be a mapping, got {type(section).__name__}")
    out = dict(DEFAULTS)
    out.update({k: section[k] for k in DEFAULTS if k in section})
    return out


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise DriverError("the postgres driver needs psycopg 3: pip install 'saltpan[postgres]' "
                          "(or pip install 'psycopg[binary]')") from None
    return psycopg


@contextmanager
def _cursor(conf: Mapping[str, Any]) -> Iterator[Any]:
    psycopg = _psycopg()
    left = _deadline.bounded(None, 30.0) or 30.0
    where = f"{conf['user']}@{conf['host']}:{conf['port']}/{conf['db']}"
    try:
        conn = psycopg.connect(host=str(conf["host"]), port=int(conf["port"]), user=str(conf["user"]),
                               password=str(conf["pass"]), dbname=str(conf["db"]),
                               connect_timeout=max(1, math.ceil(left)),
                               options=f"-c statement_timeout={max(1, int(left * 1000))}",
                               application_name="saltpan ext_pillar")
    except psycopg.Error as exc:
        raise DriverError(f"cannot connect to PostgreSQL {where}: {_first_line(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise DriverError(f"bad postgres connection settings: {exc}") from None
    try:
        conn.read_only = True
        with conn.cursor() as cursor:
            yield cursor
    finally:
        conn.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _describe(exc: Exception) -> str | None:
    psycopg = _psycopg()
    if not isinstance(exc, psycopg.Error):
        if isinstance(exc, (TypeError, ValueError)) and "placeholder" in str(exc):
            return f"{exc} (the query must use the minion id placeholder %s exactly once; write a literal % as %%)"
        return None
    text = _first_line(exc)
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return f"{text} (ext_pillar_timeout)"
    if isinstance(exc, psycopg.ProgrammingError) and "placeholder" in text:
        return f"{text} (the query must use the minion id placeholder %s exactly once; write a literal % as %%)"
    return text


def ext_pillar(minion_id: str, pillar: dict, *args: Any, opts: Mapping[str, Any] | None = None,
               **kwargs: Any) -> dict[str, Any]:
    conf = settings(opts or {})
    return sql_base.fetch(lambda: _cursor(conf), minion_id, args, kwargs, "POSTGRES", _describe)
