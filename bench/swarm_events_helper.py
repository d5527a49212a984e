"""Watch a master's event bus during an auth storm (used by bench/swarm.py).

Run with the project's python for a saltpan master (``runtime.events.EventListener``)
or with the Salt venv's python for a salt-master (``salt.utils.event.get_master_event``).
Prints ``ready`` on stdout once subscribed, then records, per minion id, the
``time.monotonic()`` (system-wide on Linux, so comparable with the caller's) of its first
accepted ``salt/auth`` event and of its ``salt/minion/<id>/start`` event, which a minion
of either implementation fires once its first session is up (authenticated, pillar
fetched).  Stops when ``--count`` minions have started or after ``--timeout`` seconds.

Writes JSON to --out: {"auth": {id: t}, "start": {id: t}}.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def saltpan_events(conf: str) -> Iterator[tuple[str, dict[str, Any]] | None]:
    sys.path.insert(0, str(BENCH.parent))
    from runtime import config
    from runtime.events import EventListener

    opts = config.load(conf, "master")
    listener = EventListener(opts["sock_dir"], "salt/")
    if not listener.wait_connected(opts["sock_dir"], 10.0):
        raise SystemExit("cannot subscribe to the saltpan master's event bus")
    print("ready", flush=True)
    while True:
        yield listener.get(0.5)


def salt_events(conf: str) -> Iterator[tuple[str, dict[str, Any]] | None]:
    import salt.config
    import salt.utils.event

    opts = salt.config.master_config(conf)
    event = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True)
    event.connect_pub(timeout=10)
    print("ready", flush=True)
    while True:
        found = event.get_event(wait=0.5, full=True)
        yield (found["tag"], found.get("data") or {}) if found else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("saltpan", "salt"), required=True)
    parser.add_argument("--conf", required=True, help="the master's config file")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    source: Callable[[str], Iterator[Any]] = saltpan_events if args.kind == "saltpan" else salt_events
    auth: dict[str, float] = {}
    start: dict[str, float] = {}
    deadline = time.monotonic() + args.timeout
    for event in source(args.conf):
        now = time.monotonic()
        if event is not None:
            tag, data = event
            if tag == "salt/auth" and data.get("result") is True and isinstance(data.get("id"), str):
                auth.setdefault(data["id"], now)
            elif tag.startswith("salt/minion/") and tag.endswith("/start"):
                start.setdefault(tag[len("salt/minion/"):-len("/start")], now)
        if len(start) >= args.count or now > deadline:
            break
    args.out.write_text(json.dumps({"auth": auth, "start": start}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
