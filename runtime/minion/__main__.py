"""The minion process proper: `saltpan minion` parses its config, then re-executes here.

Parsing Salt's YAML config pulls in PyYAML and argparse; the long-running minion needs
neither, so `saltpan minion` hands the parsed options over in an anonymous memory file
(JSON) and replaces itself with this lean process (same pid: systemd and pid files are
unaffected).  Set SALTPAN_NO_REEXEC=1 to keep a single process.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from runtime.minion.lean_imports import lean_minion_imports

    lean_minion_imports()
    import json
    import os

    if len(argv) != 2 or argv[0] != "--opts-fd" or not argv[1].isdigit():
        print("usage: python -m runtime.minion --opts-fd FD  (started by `saltpan minion`)", file=sys.stderr)
        return 2
    fd = int(argv[1])
    with os.fdopen(fd, "rb") as fh:
        opts = json.loads(fh.read())
    from runtime.minion import daemon

    return daemon.run(opts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
