"""Whether a master lives here, checked before a command reads its keys, job cache or event bus.

Without it, ``saltpan run`` without ``-c`` on a host with no master says it cannot read a client
key, and ``key -L``, ``jobs list``, ``minions`` answer with nothing while creating /etc/saltpan
and /var/cache/saltpan.  Each check only looks (``stat``): a path that cannot be looked at (a
publisher_acl user outside the master's 0700 directories) is left to the command's own error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.cli.errors import UsageError
from runtime.cli.options import DEFAULT_CONFIG_DIR

if TYPE_CHECKING:
    from runtime.client import LocalClient


def absent(path: str) -> bool:
    """True when path certainly does not exist (not when it cannot be looked at)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _config_words(opts: Mapping[str, Any], key: str) -> tuple[str, str]:
    """(where a path comes from, the -c a command needs), for a message."""
    conf = opts.get("conf_file")
    if conf:
        return f"{key} of {conf}", f" -c {conf}"
    return f"the default {key}: no -c given and no {DEFAULT_CONFIG_DIR}/master", " -c CONFIG"


def require_master(opts: Mapping[str, Any], running: bool = False) -> None:
    """A master has started with these options at least once (it made its key pair)."""
    pub = os.path.join(str(opts["pki_dir"]), "master.pub")
    if absent(pub):
        where, flag = _config_words(opts, "pki_dir")
        state = "is running" if running else "has run"
        raise UsageError(f"no master {state} here: no master key at {pub} ({where}); pass -c with your master's "
                         f"config, or start the master (saltpan master{flag})")


def require_running(opts: Mapping[str, Any]) -> None:
    """A master runs with these options (its event bus socket is there)."""
    require_master(opts, running=True)
    sock = os.path.join(str(opts["sock_dir"]), "master_event_pub.ipc")
    if absent(sock):
        where, flag = _config_words(opts, "sock_dir")
        raise UsageError(f"no master is running here: no event bus at {sock} ({where}); start the master "
                         f"(saltpan master{flag}), or pass -c with the config of the master that runs")


def client_for(opts: dict[str, Any]) -> LocalClient:
    """A LocalClient of the master running with opts (UsageError when there is none)."""
    from runtime.client import LocalClient

    require_running(opts)
    return LocalClient(opts)
