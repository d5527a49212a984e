"""Canary secrets and the scanner that looks for them wherever an attacker could read.

A canary is a random string planted where only the master (or one minion's pillar) should
ever read it: a file next to the roots, each minion's pillar (from an sls and from an
ext_pillar), the master's client keys and private key.  Any reply, event, return or log line
holding one is a leak.  Byte strings are searched raw and as text; keys are also searched in
their raw (binary) form, since a leak could carry bytes rather than hex.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


def new_canary(label: str) -> str:
    return f"CANARY-{label}-{secrets.token_hex(8)}"


@dataclass
class Canaries:
    """Named secrets: ``name -> needles`` (each needle a str or bytes that must never be seen)."""

    needles: dict[str, list[bytes]] = field(default_factory=dict)

    def add(self, name: str, *values: str | bytes) -> None:
        out = self.needles.setdefault(name, [])
        for value in values:
            raw = value.encode() if isinstance(value, str) else value
            if len(raw) >= 8 and raw not in out:
                out.append(raw)

    def find(self, blob: bytes | str) -> list[str]:
        """Names of the canaries present in ``blob``."""
        data = blob.encode("utf-8", "surrogateescape") if isinstance(blob, str) else bytes(blob)
        return [name for name, needles in self.needles.items() if any(n in data for n in needles)]

    def find_in(self, obj: Any) -> list[str]:
        """Names of the canaries anywhere inside a decoded object (keys and values)."""
        found: set[str] = set()
        for leaf in _leaves(obj):
            found.update(self.find(leaf))
        return sorted(found)


def _leaves(obj: Any) -> Iterator[bytes | str]:
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple, set, frozenset)):
            stack.extend(node)
        elif isinstance(node, (bytes, bytearray, memoryview)):
            yield bytes(node)
        elif isinstance(node, str):
            yield node
        elif node is not None:
            yield str(node)


def leaks(canaries: Canaries, items: Iterable[tuple[str, Any]]) -> list[str]:
    """``["<where>: <canary names>", ...]`` for every item that holds a canary."""
    out = []
    for where, obj in items:
        names = canaries.find(obj) if isinstance(obj, (bytes, str)) else canaries.find_in(obj)
        if names:
            out.append(f"{where}: {', '.join(names)}")
    return out
