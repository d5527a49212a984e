"""PostgreSQL for the master's stores: connections per process, transactions, errors.

One :class:`PgDatabase` per process (the factory makes it after the master forks its children,
and a process that forks again never touches its parent's connections).  It keeps up to
``pool_size`` connections open and hands them to one caller at a time:

* :meth:`PgDatabase.run` runs a unit of work in one transaction.  A connection that died while
  idle (PostgreSQL restarted, a proxy timed it out) is noticed at the first statement: the work
  is run once more on a new connection, since nothing of it was committed.
* Any failure to reach the server, a connection that breaks mid-work, or a statement running past
  ``statement_timeout`` raises :class:`StoreUnavailable` naming the server (never the password)
  and what to do; a missing table raises :class:`SchemaError` (run ``--init-store``).

psycopg (3) is imported only here, when a PostgreSQL store is opened: a master on SQLite and
every other command never load it (``pip install 'saltpan[postgres]'`` brings it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from runtime.master.store.errors import SchemaError, StoreError, StoreUnavailable

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

T = TypeVar("T")

# Connections inherited through fork() are parked here, never used or closed: closing one in the
# child would end the parent's session on the shared socket.
_INHERITED: list[Any] = []


@dataclass(frozen=True)
class PgSettings:
    dsn: str
    pool_size: int = 2
    connect_timeout: float = 5.0
    statement_timeout: float = 10.0
    application_name: str = "saltpan-master"

    def describe(self) -> str:
        """The server as a log line may name it: host, port, database, user; no password."""
        try:
            from psycopg.conninfo import conninfo_to_dict

            parts = conninfo_to_dict(self.dsn)
        except Exception:  # noqa: BLE001 - an unparsable DSN is reported when connecting
            return "PostgreSQL (master_store_dsn)"
        host = parts.get("host") or parts.get("hostaddr") or "local socket"
        port = parts.get("port") or "5432"
        db = parts.get("dbname") or parts.get("user") or "?"
        return f"PostgreSQL {host}:{port}/{db}"


def scalar(conn: Conn, sql: str, params: tuple[object, ...] = ()) -> Any:
    """The first column of the one row ``sql`` returns (a count, a max, a RETURNING)."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise StoreError(f"no row from {sql.split()[0]} (a bug: please report it)")
    return row[0]


def import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError("master_store: postgres needs psycopg 3: pip install 'saltpan[postgres]'") from None
    return psycopg


class PgDatabase:
    """A small pool of autocommit connections of one process, thread-safe."""

    def __init__(self, settings: PgSettings):
        if not settings.dsn:
            raise StoreError("master_store: postgres needs master_store_dsn (e.g. "
                             "'postgresql://saltpan@db.example.com/saltpan'): see docs/operations.md")
        self.settings = settings
        self._psycopg = import_psycopg()
        self._lock = threading.Condition()
        self._idle: list[Conn] = []
        self._open = 0
        self._pid = os.getpid()

    @property
    def psycopg(self) -> Any:
        """The psycopg module (imported when the database was set up)."""
        return self._psycopg

    def dedicated_connection(self) -> Conn:
        """A connection outside the pool, for a caller that keeps it (a LISTEN); the caller
        closes it.  ``StoreUnavailable`` when the server cannot be reached."""
        return self._connect()

    # ------------------------------------------------------------ connections
    def _connect(self) -> Conn:
        psycopg = self._psycopg
        s = self.settings
        try:
            conn = psycopg.connect(s.dsn, autocommit=True, connect_timeout=max(1, round(s.connect_timeout)),
                                   application_name=s.application_name)
        except psycopg.Error as exc:
            raise self.unavailable(exc) from None
        try:
            if s.statement_timeout > 0:
                conn.execute(f"SET statement_timeout = {int(s.statement_timeout * 1000)}")
        except psycopg.Error as exc:
            conn.close()
            raise self.unavailable(exc) from None
        return conn

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailable(f"{self.settings.describe()} is unavailable ({first}): check that it runs and "
                                "that master_store_dsn is right (docs/operations.md)")

    def _forked(self) -> None:
        if self._pid != os.getpid():
            _INHERITED.extend(self._idle)
            self._idle = []
            self._open = 0
            self._pid = os.getpid()

    def _checkout(self) -> tuple[Conn, bool]:
        """(a connection, whether it was reused from the pool)."""
        deadline = time.monotonic() + self.settings.connect_timeout
        with self._lock:
            self._forked()
            while True:
                if self._idle:
                    return self._idle.pop(), True
                if self._open < max(1, self.settings.pool_size):
                    self._open += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreUnavailable(f"all {self.settings.pool_size} connections to "
                                           f"{self.settings.describe()} stayed busy for "
                                           f"{self.settings.connect_timeout:g} s (raise master_store_pool_size)")
                self._lock.wait(left)
        try:
            return self._connect(), False
        except BaseException:
            with self._lock:
                self._open -= 1
                self._lock.notify()
            raise

    def _checkin(self, conn: Conn) -> None:
        with self._lock:
            if self._pid != os.getpid():
                _INHERITED.append(conn)
                return
            if conn.closed or conn.broken or conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                self._open -= 1
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - a dead connection
                    pass
            else:
                self._idle.append(conn)
            self._lock.notify()

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A connection of the pool for the block (autocommit; errors mapped as :meth:`run`)."""
        conn, _ = self._checkout()
        try:
            yield conn
        except self._psycopg.Error as exc:
            raise self._mapped(exc, conn) from None
        finally:
            self._checkin(conn)

    def _mapped(self, exc: BaseException, conn: Conn | None) -> StoreError:
        psycopg = self._psycopg
        if isinstance(exc, psycopg.errors.UndefinedTable):
            return SchemaError(f"{self.settings.describe()} has no saltpan schema ({str(exc).splitlines()[0]}): "
                               "run 'saltpan master --init-store'")
        if isinstance(exc, (psycopg.OperationalError, psycopg.errors.QueryCanceled)) or (
                conn is not None and (conn.closed or conn.broken)):
            return self.unavailable(exc)
        text = str(exc).strip()
        return StoreError(f"{self.settings.describe()}: {text.splitlines()[0] if text else repr(exc)}")

    def run(self, work: Callable[[Conn], T], *, transaction: bool = True) -> T:
        """``work(conn)`` in one transaction, or with ``transaction=False`` as autocommit
        statements (reads only: a read needs no transaction of its own); once more on a new
        connection when a pooled one turns out dead before anything was committed."""
        psycopg = self._psycopg
        for attempt in (1, 2):
            conn, reused = self._checkout()
            worked = False
            try:
                if not transaction:
                    return work(conn)      # a read: safe to do again
                with conn.transaction():
                    result = work(conn)
                    worked = True     # past here only the COMMIT: its outcome is unknown if it fails
                return result
            except psycopg.Error as exc:
                if attempt == 1 and reused and not worked and (conn.closed or conn.broken):
                    continue   # died while idle: nothing of the work was committed, do it again
                raise self._mapped(exc, conn) from None
            finally:
                self._checkin(conn)
        raise AssertionError("unreachable")

    def write(self, sql: str, params: tuple[object, ...] = (), *, again: str | None = None) -> int:
        """One write statement on its own, in autocommit (PostgreSQL runs it atomically, in a
        transaction of its own): the rows it changed.  Two round trips fewer than :meth:`run`
        (BEGIN and COMMIT of a one-statement transaction), which a request's writes (its return,
        the minion's grains and pillar) paid each time.  Only for a statement that can be sent
        again: an upsert, or an ``INSERT ... ON CONFLICT DO NOTHING`` whose caller takes 0 rows for
        "there already", or one whose repeat is harmless (the shared events: copied at least once) — a
        pooled connection found dead gets it once more on a new one (as :meth:`run` does), and if
        that connection died after PostgreSQL committed it, the repeat finds the row.  ``again``:
        the statement sent on that second try instead (same parameters), for a write whose repeat
        must not undo what others wrote meanwhile (an upsert that leaves a newer row alone)."""
        return self._send(sql, params, again, lambda cur: int(cur.rowcount))

    def write_returning(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """As :meth:`write`, for a statement with ``RETURNING``: the rows it returned."""
        return self._send(sql, params, None, lambda cur: list(cur.fetchall()))

    def _send(self, sql: str, params: tuple[object, ...], again: str | None,
              take: Callable[[Any], T]) -> T:
        psycopg = self._psycopg
        for attempt in (1, 2):
            conn, reused = self._checkout()
            try:
                return take(conn.execute(sql if attempt == 1 or again is None else again, params))
            except psycopg.Error as exc:
                if attempt == 1 and reused and (conn.closed or conn.broken):
                    continue
                raise self._mapped(exc, conn) from None
            finally:
                self._checkin(conn)
        raise AssertionError("unreachable")

    @contextmanager
    def transaction(self, first: str, params: tuple[object, ...] = ()) -> Iterator[Conn]:
        """A transaction whose first statement is ``first`` (e.g. taking an advisory lock), for
        work that cannot be wrapped in a function for :meth:`run`; a pooled connection found
        dead at that first statement is replaced once."""
        psycopg = self._psycopg
        for attempt in (1, 2):
            conn, reused = self._checkout()
            try:
                try:
                    conn.execute("BEGIN")
                    conn.execute(first, params)
                except psycopg.Error as exc:
                    if attempt == 1 and reused and (conn.closed or conn.broken):
                        continue   # died while idle: nothing was done, take a new connection
                    raise self._mapped(exc, conn) from None
                try:
                    yield conn
                except BaseException as exc:
                    try:
                        conn.execute("ROLLBACK")
                    except psycopg.Error:
                        pass
                    if isinstance(exc, psycopg.Error):
                        raise self._mapped(exc, conn) from None
                    raise
                try:
                    conn.execute("COMMIT")
                except psycopg.Error as exc:
                    raise self._mapped(exc, conn) from None
                return
            finally:
                self._checkin(conn)
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._forked()
                return
            for conn in self._idle:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001
                    pass
            self._open -= len(self._idle)
            self._idle = []
