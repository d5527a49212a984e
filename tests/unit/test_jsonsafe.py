"""runtime.master.jsonsafe: what a minion sends is stored as JSON whatever its keys, and the fast
path (the C encoder alone) gives the same text as the key-rebuilding one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.master import jsonsafe

CASES: list[Any] = [
    {"os": "Debian", "ipv4": ["10.0.0.1"], "nested": {"a": [1, 2.5, None, True]}},
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    {b"bytes key": {b"inner": b"bytes value"}, "text": "x"},
    {("tuple", "key"): 1, "list": [{b"k": 1}, (1, 2)]},
    [{b"k": {1: {b"deep": [b"v"]}}}],
    {"set value": {1, 2}, "bytes value": b"\xff\xfe"},
    {"unicode": "é", b"\xff": "invalid utf-8 key"},
    "plain", 42, None, [],
]


@pytest.mark.parametrize("data", CASES)
def test_dumps_gives_what_the_key_rebuilding_path_gives(data: Any) -> None:
    text = jsonsafe.dumps(data)
    assert text == json.dumps(jsonsafe.jsonable(data), default=str)
    json.loads(text)           # and it is JSON


def test_keys_become_text() -> None:
    assert json.loads(jsonsafe.dumps({b"k": 1, 2: {b"\xff": None}, ("a", 1): 3})) == \
        {"k": 1, "2": {"\ufffd": None}, "('a', 1)": 3}
