"""grains.* through saltpan call.  Setting grains writes the minion's grains file (Salt's
<config dir>/grains) and the next call reads it.  Captured from Salt 3008.3:

    grains.setval role web     -> {role: web}
    grains.append b y          -> {b: [y]}, again -> "The val y was already in the list b"
    grains.remove b x          -> "The val x was not in the list b"
    grains.delval a            -> {comment: "", changes: {a: None}, result: True}  (a: null in the file)
    grains.delkey role         -> (role a list) result False, "The key 'role' exists but is a dict or a list.
                                  Use 'force=True' to overwrite."; with force=True: changes {role: None}
    grains.set (nested keys, lists, force): test_grains_set's sequence, every answer as Salt's
"""

from __future__ import annotations

import yaml

from tests.modules.conftest import Minion


def test_reading_grains(minion: Minion) -> None:
    assert minion.call("grains.get", "datacenter") == "ams1"
    assert minion.call("grains.get", "ip4_interfaces:eth0") == ["10.1.2.3"]
    assert minion.call("grains.get", "nope", "fallback") == "fallback"
    assert minion.call("grains.fetch", "roles:0") == "web"
    assert minion.call("grains.item", "datacenter", "id") == {"datacenter": "ams1", "id": "tester"}
    items = minion.call("grains.items")
    assert items["id"] == "tester" and items["roles"] == ["web", "db"] and "os_family" in items
    assert minion.call("grains.ls") == sorted(items)
    assert minion.call("grains.has_value", "datacenter") is True
    assert minion.call("grains.has_value", "nope") is False
    assert minion.call("grains.equals", "datacenter", "ams1") is True
    assert minion.call("grains.filter_by", "{ams1: {ntp: a.example}, default: {ntp: b.example}}",
                       "grain=datacenter") == {"ntp": "a.example"}


def test_setting_grains_writes_the_grains_file(minion: Minion) -> None:
    grains_file = minion.base / "grains"
    assert minion.call("grains.setval", "role", "web") == {"role": "web"}
    assert minion.call("grains.get", "role") == "web"           # a new call reads the file
    assert minion.call("grains.setvals", "{a: 1, b: [x]}") == {"a": 1, "b": ["x"]}
    assert minion.call("grains.append", "b", "y") == {"b": ["x", "y"]}
    assert minion.call("grains.append", "b", "y") == "The val y was already in the list b"
    assert minion.call("grains.append", "newlist", "z") == {"newlist": ["z"]}
    assert minion.call("grains.append", "role", "z") == "The key role is not a valid list"
    assert minion.call("grains.append", "role", "db", "convert=True") == {"role": ["web", "db"]}
    assert minion.call("grains.remove", "b", "x") == {"b": ["y"]}
    assert minion.call("grains.remove", "b", "x") == "The val x was not in the list b"
    assert minion.call("grains.delval", "a") == {"comment": "", "changes": {"a": None}, "result": True}
    assert yaml.safe_load(grains_file.read_text())["a"] is None
    assert minion.call("grains.delkey", "role") == {
        "comment": "The key 'role' exists but is a dict or a list. Use 'force=True' to overwrite.",
        "changes": {}, "result": False}
    assert minion.call("grains.get", "role") == ["web", "db"]
    assert minion.call("grains.delkey", "role", "force=True") == {
        "comment": "", "changes": {"role": None}, "result": True}
    assert yaml.safe_load(grains_file.read_text()) == {"a": None, "b": ["y"], "newlist": ["z"]}
    assert minion.call("grains.get", "role", "gone") == "gone"
    assert "must be a dictionary" in minion.error("grains.setvals", "[1, 2]")


def _set(changes: dict | None = None, comment: str = "") -> dict:
    return {"comment": comment, "changes": changes or {}, "result": True}


def test_grains_set(minion: Minion) -> None:
    """grains.set on nested keys, as Salt 3008.3 answered the same sequence (captured)."""
    force = "Use 'force=True' to overwrite."
    assert minion.call("grains.set", "apps:web:port", "80") == _set({"apps": {"web": {"port": 80}}})
    assert minion.call("grains.set", "apps:web:port", "80") == _set(comment="Grain is already set")
    refused = minion.call("grains.set", "apps:web", "{x: 1}")
    assert refused == {"comment": f"The key 'apps:web' exists but is a dict or a list. {force}",
                       "changes": {}, "result": False}
    assert minion.call("grains.set", "apps:web:port", "81") == _set({"apps": {"web": {"port": 81}}})
    assert minion.call("grains.set", "apps", "[a]", "force=True") == _set({"apps": ["a"]})
    assert minion.call("grains.set", "apps:b", "1") == _set({"apps": ["a", {"b": 1}]})
    assert minion.call("grains.set", "s", "1") == _set({"s": 1})
    assert minion.call("grains.set", "s", "[1]") == {
        "comment": f"The key 's' exists and the given value is a dict or a list. {force}", "changes": {},
        "result": False}
    assert minion.call("grains.set", "s:k", "2") == {
        "comment": f"The key 's' value is '1', which is different from the provided key 'k'. {force}",
        "changes": {}, "result": False}
    assert minion.call("grains.delval", "nosuch") == _set({"nosuch": None})
    assert minion.call("grains.delval", "apps:b", "destructive=True") == _set({"apps": ["a", {"b": None}]})
    assert yaml.safe_load((minion.base / "grains").read_text()) == {
        "apps": ["a", {"b": None}], "nosuch": None, "s": 1}
