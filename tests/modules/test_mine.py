"""mine.* through saltpan call on a masterless minion: Salt keeps the mine in the minion's own cache
there, and mine.get answers only the minion's own data when the target matches it
(docs/mine.md; through a master: tests/integration/test_mine.py)."""

from __future__ import annotations

import json
import stat

from tests.modules.conftest import Minion


def test_update_from_pillar_then_get(minion: Minion) -> None:
    assert minion.call("mine.update") is None          # nothing configured yet: Salt returns None
    minion.write("pillar", "data.sls", """\
        mine_functions:
          network.ip_addrs: []
          eth0_addrs:
            - mine_function: network.ip_addrs
            - eth0
          role_list:
            mine_function: grains.get
            key: roles
          broken:
            - mine_function: no_such.function
        """)
    assert minion.call("mine.update") is True
    assert minion.call("mine.get", "tester", "network.ip_addrs") == {"tester": ["10.1.2.3"]}
    assert minion.call("mine.get", "*", "eth0_addrs") == {"tester": ["10.1.2.3"]}
    assert minion.call("mine.get", "roles:web", "role_list", "grain") == {"tester": ["web", "db"]}
    assert minion.call("mine.get", "other*", "network.ip_addrs") == {}        # the target misses this minion
    assert minion.call("mine.get", "*", "broken") == {}                       # a missing function is left out
    assert minion.call("mine.get", "*", "network.ip_addrs,role_list") == {
        "network.ip_addrs": {"tester": ["10.1.2.3"]}, "role_list": {"tester": ["web", "db"]}}
    cache = minion.cachedir / "mine_cache.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert set(json.loads(cache.read_text())) == {"network.ip_addrs", "eth0_addrs", "role_list"}
    assert minion.call("mine.valid") == {"network.ip_addrs": [], "eth0_addrs": {"network.ip_addrs": ["eth0"]},
                                         "role_list": {"grains.get": [{"key": "roles"}]}}


def test_update_clear_replaces_the_mine(minion: Minion) -> None:
    assert minion.call("mine.send", "first", "mine_function=test.echo", "one") is True
    assert minion.call("mine.update", "clear=True", "mine_functions=[test.ping]") is True
    assert minion.call("mine.get", "*", "first") == {}
    assert minion.call("mine.get", "*", "test.ping") == {"tester": True}


def test_send_with_allow_tgt_delete_and_flush(minion: Minion) -> None:
    assert minion.call("mine.valid") is None
    assert minion.call("mine.send", "datacenter", "mine_function=grains.get", "datacenter",
                       "allow_tgt=web*") is True
    assert minion.call("mine.get", "*", "datacenter") == {"tester": "ams1"}
    stored = json.loads((minion.cachedir / "mine_cache.json").read_text())["datacenter"]
    assert stored == {"__data__": "ams1", "__saltmine_acl__": 1, "allow_tgt": "web*"}   # Salt's wrapped entry
    assert minion.call("mine.send", "fails", "mine_function=cmd.run") is False   # missing argument: False
    assert minion.call("mine.send", "grains.item", "datacenter") is True
    assert minion.call("mine.get", "*", ["grains.item", "datacenter"]) == {
        "grains.item": {"tester": {"datacenter": "ams1"}}, "datacenter": {"tester": "ams1"}}
    assert minion.call("mine.delete", "datacenter") is True
    assert minion.call("mine.get", "*", "datacenter") == {}
    assert minion.call("mine.get", "*", "grains.item") != {}
    assert minion.call("mine.flush") is True
    assert minion.call("mine.get", "*", "grains.item") == {}


def test_a_malformed_target_is_an_error(minion: Minion) -> None:
    assert "invalid compound target" in minion.error("mine.get", "G@roles:web and (", "x.y", "compound")
