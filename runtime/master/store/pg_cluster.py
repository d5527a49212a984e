"""The cluster's name and signing key in PostgreSQL (``saltpan_cluster``, one row).

The masters of one cluster sign authentication replies and publications with one key (Ed25519,
the role ``master.pem`` has for a single master), so a minion that trusts it (its cached
``minion_master.pub`` or ``master_finger``) trusts every master of the cluster and may move from
one to another.  The first master that starts with ``cluster_id`` on a database stores its own
key pair as the cluster key (minions that already trust that master keep trusting it); the others
take it from the database: no key file is copied by hand.  A database belongs to one cluster: a
master whose ``cluster_id`` differs is refused.

:func:`rotate` starts a new key and keeps the previous one (docs/operations.md, "Rotating the
cluster key").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.crypt.identity import Identity
from runtime.master.store.errors import StoreError
from runtime.master.store.pg import PgDatabase

if TYPE_CHECKING:
    from runtime.master.store.pg import Conn

CLUSTER_LOCK = 0x5A17_0002


def _identity(pem: bytes, where: str) -> Identity:
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise StoreError(f"{where}: the cluster key in saltpan_cluster is unreadable ({exc})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise StoreError(f"{where}: the cluster key in saltpan_cluster is not an Ed25519 key")
    return Identity.from_private(private)


def join(db: PgDatabase, cluster_id: str, own: Identity) -> tuple[Identity, bool]:
    """The cluster's signing key, storing ``own`` as that key when the database has none yet:
    (key, whether this master created the cluster).  ``StoreError`` when the database belongs
    to another cluster."""
    where = db.settings.describe()

    def work(conn: Conn) -> tuple[Identity, bool]:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLUSTER_LOCK,))
        row = conn.execute("SELECT cluster_id, signing_key FROM saltpan_cluster WHERE one = 1").fetchone()
        if row is None:
            conn.execute("INSERT INTO saltpan_cluster (one, cluster_id, signing_key, created) VALUES (1, %s, %s, %s)",
                         (cluster_id, own.private_pem(), time.time()))
            return own, True
        if row[0] != cluster_id:
            raise StoreError(f"{where} belongs to cluster {row[0]!r}, but this master's cluster_id is "
                             f"{cluster_id!r}: set cluster_id: {row[0]} (one database holds one cluster)")
        return _identity(bytes(row[1]), where), False

    return db.run(work)


def current(db: PgDatabase) -> tuple[str, Identity] | None:
    """(cluster_id, signing key), or None when no master joined a cluster on this database."""
    row = db.run(lambda c: c.execute("SELECT cluster_id, signing_key FROM saltpan_cluster WHERE one = 1").fetchone(),
                 transaction=False)
    if row is None:
        return None
    return row[0], _identity(bytes(row[1]), db.settings.describe())


def rotate(db: PgDatabase, cluster_id: str) -> tuple[Identity, Identity]:
    """A new signing key for the cluster, the current one kept as ``previous_key``: (old, new)."""
    where = db.settings.describe()
    new = Identity.generate()

    def work(conn: Conn) -> Identity:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLUSTER_LOCK,))
        row = conn.execute("SELECT cluster_id, signing_key FROM saltpan_cluster WHERE one = 1").fetchone()
        if row is None:
            raise StoreError(f"{where} has no cluster yet: start a master with cluster_id first")
        if row[0] != cluster_id:
            raise StoreError(f"{where} belongs to cluster {row[0]!r}, not {cluster_id!r}")
        conn.execute("UPDATE saltpan_cluster SET previous_key = signing_key, signing_key = %s, rotated = %s "
                     "WHERE one = 1", (new.private_pem(), time.time()))
        return _identity(bytes(row[1]), where)

    return db.run(work), new


def masters(db: PgDatabase) -> list[tuple[str, int, int]]:
    """The masters that ever started on this database: (master id, started ms, last pass ms)."""
    rows = db.run(lambda c: c.execute("SELECT master_id, started, seen FROM saltpan_masters ORDER BY master_id")
                  .fetchall(), transaction=False)
    return [(r[0], int(r[1]), int(r[2])) for r in rows]
