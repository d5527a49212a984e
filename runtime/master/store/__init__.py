"""The master's stores behind their interfaces: build them with ``runtime.master.store.factory``.

Interfaces (what callers name): ``runtime.master.keys.KeyStore``, ``runtime.master.jobcache.JobCache``,
``runtime.master.datacache.DataCache``, ``runtime.master.sessions.SessionStore``,
``runtime.master.changes.ChangeLog``.  Backends (only the factory names them): ``file_keys`` and
``sqlite_*`` (``master_store: sqlite``), ``pg_*`` (``master_store: postgres``).  Errors every
backend raises: ``errors``.  Choosing and running a store: docs/operations.md.
"""
