"""The minion's trust in its master's key: trust on first use, ``master_finger`` pinning, and
refusal of a changed key.

The master's public key is cached as ``<pki_dir>/minion_master.pub`` (Salt's name).

- No cached key, no pin: the first key whose signature verifies is saved, and a warning with its
  fingerprint is logged so an operator can compare it with ``saltpan key -f`` on the master.
- ``master_finger`` set: only a key with that SHA-256 fingerprint is ever accepted or saved.
- Cached key: any other key is refused with :class:`MasterKeyMismatch`; the file is never
  replaced automatically (delete it by hand after a legitimate master key change).
"""

from __future__ import annotations

import logging
import os

from runtime.crypt.errors import KeyFileError, MasterKeyMismatch
from runtime.crypt.identity import fingerprint, normalize_fingerprint, public_from_pem, public_to_pem
from runtime.private_files import PrivateFileError, ensure_private_dir, read_private, write_private

MASTER_KEY_FILE = "minion_master.pub"

log = logging.getLogger(__name__)


class MasterTrust:
    """Implements ``handshake.MasterKeyCheck`` over a file in ``pki_dir``."""

    def __init__(self, pki_dir: str, master_finger: str | None = None, *,
                 filename: str = MASTER_KEY_FILE, logger: logging.Logger | None = None, durable: bool = True) -> None:
        self.path = os.path.join(pki_dir, filename)
        self.durable = durable   # False: saved without fsync (saltpan swarm's throwaway minions)
        self.pki_dir = pki_dir
        self.pin = normalize_fingerprint(master_finger) if master_finger else None
        self.log = logger or log
        self.known = self._load()
        if self.known is not None and self.pin is not None and fingerprint(self.known) != self.pin:
            raise MasterKeyMismatch(
                f"the cached master key {self.path} has fingerprint {fingerprint(self.known)} but master_finger "
                f"pins {self.pin}; remove the stale file if the master key really changed")

    def _load(self) -> bytes | None:
        try:
            data = read_private(self.path, require_private=False)
        except FileNotFoundError:
            return None
        except PrivateFileError as exc:
            raise KeyFileError(str(exc)) from None
        return public_from_pem(data, self.path)

    def check(self, master_pub: bytes) -> None:
        if self.known is not None:
            if master_pub != self.known:
                raise MasterKeyMismatch(
                    f"the master presented key {fingerprint(master_pub)} but this minion trusts "
                    f"{fingerprint(self.known)} ({self.path}); refusing it. If the master key was changed "
                    "on purpose, remove that file on this minion.")
            return
        if self.pin is not None and fingerprint(master_pub) != self.pin:
            raise MasterKeyMismatch(
                f"the master presented key {fingerprint(master_pub)} but master_finger pins {self.pin}; refusing it")

    def remember(self, master_pub: bytes) -> None:
        self.check(master_pub)
        if self.known is not None:
            return
        ensure_private_dir(self.pki_dir)
        write_private(self.path, public_to_pem(master_pub), durable=self.durable)
        self.known = master_pub
        if self.pin is not None:
            self.log.info("Master key %s matches master_finger; saved to %s", fingerprint(master_pub), self.path)
        else:
            self.log.warning("Trusting the master key seen first, fingerprint %s (saved to %s). Compare it with "
                             "'saltpan key -f master.pub' on the master, or set master_finger to pin it.",
                             fingerprint(master_pub), self.path)
