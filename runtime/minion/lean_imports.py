"""Lean imports for the minion: asyncio without its ssl support, hashlib without OpenSSL.

asyncio imports ``ssl`` (and with it OpenSSL) only to offer TLS transports; the
minion talks ZeroMQ with its own crypto, so that is about 5 MiB of resident
memory per minion for nothing.  ``ssl`` stays importable afterwards for code
that does need it (an https file source loads it on first use).  hashlib without
``_hashlib`` uses Python's built-in SHA-2/SHA-3/BLAKE2 and MD5 and keeps OpenSSL's
libcrypto out of the process (another 3-4 MiB); our crypto is the cryptography
package's, which carries its own.
"""

from __future__ import annotations

import sys


def import_asyncio_without_ssl() -> None:
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # makes `import ssl` fail inside asyncio
    try:
        import asyncio  # noqa: F401
    finally:
        if sys.modules.get("ssl", 0) is None:
            del sys.modules["ssl"]


def lean_minion_imports() -> None:
    """Call first thing in a minion (or swarm) process."""
    if "hashlib" not in sys.modules and "_hashlib" not in sys.modules:
        sys.modules["_hashlib"] = None  # type: ignore[assignment]
    import_asyncio_without_ssl()
