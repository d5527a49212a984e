"""Capture Salt's default options (salt.config.DEFAULT_MINION_OPTS / DEFAULT_MASTER_OPTS) into
runtime/data/salt_defaults.json: what the config audit test compares runtime/config.py's table with,
and the list of Salt's option names saltpan warns about when a config sets one it does not implement.

    /work/saltvenv/bin/python tools/capture_salt_defaults.py           # rewrite the file
    /work/saltvenv/bin/python tools/capture_salt_defaults.py --check   # compare, write nothing
"""

from __future__ import annotations

import argparse
import json
import os
import sys

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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    try:
        data = capture()
    except ImportError:
        print("run this with the python of a venv holding Salt 3008.3", file=sys.stderr)
        return 2
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.check:
        with open(OUT, encoding="utf-8") as fh:
            same = fh.read() == text
        print("up to date" if same else f"{OUT} differs from Salt {data['salt']}'s defaults")
        return 0 if same else 1
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {OUT}: {len(data['minion'])} minion and {len(data['master'])} master options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
