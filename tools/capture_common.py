"""What the tools capturing Salt's facts into runtime/data/ share: a JSON file rewritten from a
capture made in a venv holding Salt 3008.3, or (``--check``) compared with it, writing nothing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def capture_main(doc: str | None, out: str, capture: Callable[[], dict[str, Any]],
                 summary: Callable[[dict[str, Any]], str], what: str) -> int:
    """The command line of a capture tool: exit 0 when written or up to date, 1 when ``--check``
    finds the file differs (saying it differs from Salt's ``what``), 2 without Salt."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the stored capture, write nothing")
    args = ap.parse_args()
    try:
        data = capture()
    except ImportError:
        print("run this with the python of a venv holding Salt 3008.3", file=sys.stderr)
        return 2
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.check:
        with open(out, encoding="utf-8") as fh:
            same = fh.read() == text
        print("up to date" if same else f"{out} differs from Salt {data.get('salt', '')}'s {what}")
        return 0 if same else 1
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {out}: {summary(data)}")
    return 0
