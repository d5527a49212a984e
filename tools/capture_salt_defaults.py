"""Capture Salt's default options (salt.config.DEFAULT_MINION_OPTS / DEFAULT_MASTER_OPTS) into
runtime/data/salt_defaults.json: what the config audit test compares runtime/config.py's table with,
and the list of Salt's option names saltpan warns about when a config sets one it does not implement.

    /work/saltvenv/bin/python tools/capture_salt_defaults.py           # rewrite the file
    /work/saltvenv/bin/python tools/capture_salt_defaults.py --check   # compare, write nothing
"""

from __future__ import annotations

import os
import sys

from capture_common import capture_main

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime", "data", "salt_defaults.json")


def plain(value):
    from collections.abc import Mapping, Sequence

    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return f"<{type(value).__name__}>"


def capture() -> dict:
    import salt.config
    import salt.version

    return {"salt": salt.version.__version__,
            "minion": plain(dict(salt.config.DEFAULT_MINION_OPTS)),
            "master": plain(dict(salt.config.DEFAULT_MASTER_OPTS))}


def main() -> int:
    return capture_main(__doc__, OUT, capture, lambda d: f"{len(d['minion'])} minion and {len(d['master'])} master options",
                        "defaults")


if __name__ == "__main__":
    sys.exit(main())
