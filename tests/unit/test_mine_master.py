"""The master's side of the Salt mine (runtime/master/mine.py, the _mine* handlers) on a real
minion data cache: what a minion may read (mine_get ACL, allow_tgt), how targets match (not
greedily, pillar exact), Salt's answer shapes, and the size bound of a stored mine."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from compiler import match
from runtime import protocol
from runtime.master import mine
from runtime.master.datacache import DataTooLarge
from runtime.master.handlers.minion_data import MinionDataHandlers
from runtime.master.store.sqlite_data import SQLiteDataCache

GRAINS = {"web1": {"roles": ["web"]}, "web2": {"roles": ["web"]}, "db1": {"roles": ["db"]}}
PILLARS = {"web1": {"tier": "front*"}, "web2": {"tier": "frontend"}, "db1": {"tier": "back"}}
MINES = {"web1": {"ip": ["10.0.0.1"], "key": "k1"}, "web2": {"ip": ["10.0.0.2"]},
         "db1": {"ip": ["10.0.0.3"], "secret": {"__data__": "s3", "__saltmine_acl__": 1, "allow_tgt": "web1"}},
         "new1": {"ip": ["10.0.0.9"]}}
ACCEPTED = ["web1", "web2", "db1", "new1"]


def lookup(requester: str, tgt: Any, fun: Any, tgt_type: str = "glob", acl: Any = None) -> dict[str, Any]:
    return mine.lookup(requester, tgt, fun, tgt_type, acl=acl, accepted=ACCEPTED, mines=MINES, grains=GRAINS,
                       pillars=PILLARS, nodegroups={})


def test_shapes_one_function_or_several() -> None:
    assert lookup("web1", "*", "ip") == {m: MINES[m]["ip"] for m in ACCEPTED}
    assert lookup("web1", "web*", "ip,key") == {"ip": {"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]},
                                                "key": {"web1": "k1"}}
    assert lookup("web1", ["db1", "web2"], ["ip"], "list") == {"ip": {"db1": ["10.0.0.3"], "web2": ["10.0.0.2"]}}
    assert lookup("web1", "*", "nope") == {}


def test_targets_match_as_salts_mine_does() -> None:
    # new1 has mine data but no cached grains: no grain target matches it (not greedy)
    assert lookup("web1", "roles:web", "ip", "grain") == {"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]}
    assert lookup("web1", "tier:front*", "ip", "pillar") == {"web1": ["10.0.0.1"]}      # pillar means exact
    assert lookup("web1", "tier:front*", "ip", "pillar_pcre") == {"web1": ["10.0.0.1"], "web2": ["10.0.0.2"]}
    with pytest.raises(match.MatchError):
        lookup("web1", "G@roles:web and (", "ip", "compound")


def test_minion_side_acl() -> None:
    assert lookup("web1", "db1", "secret") == {"db1": "s3"}
    assert lookup("web2", "db1", "secret") == {}
    assert lookup("db1", "db1", "secret") == {}


def test_the_master_acl(caplog: pytest.LogCaptureFixture) -> None:
    acl = {"web[0-9]+$": ["ip"], "db.*": ["k.*", "secret"]}
    assert lookup("web2", "*", "ip,key", acl=acl) == {"ip": {m: MINES[m]["ip"] for m in ACCEPTED}}
    assert lookup("db1", "*", "ip,key", acl=acl) == {"key": {"web1": "k1"}}
    assert lookup("web1x", "*", "ip", acl=acl) == {}                 # no key matches: nothing
    assert lookup("new1", "*", "ip", acl={}) == {}                    # an empty ACL grants nothing
    assert lookup("web1", "*", "ip", acl=["web1"]) == {}              # not a mapping: nothing, logged
    with caplog.at_level(logging.ERROR, logger="saltpan.master.mine"):
        assert lookup("web1", "*", "ip", acl={"*": ["ip"]}) == {}     # '*' is no regex: grants nothing
    assert "is not a regular expression" in caplog.text


@dataclass
class _Keys:
    def list_keys(self) -> dict[str, list[str]]:
        return {"minions": list(ACCEPTED)}


@dataclass
class _Context:
    """What MinionDataHandlers' mine methods use of a worker's context (a real data cache)."""

    data: SQLiteDataCache
    opts: dict[str, Any] = field(default_factory=dict)
    keys: _Keys = field(default_factory=_Keys)


def test_handlers_store_merge_delete_flush_and_bound_the_size(tmp_path) -> None:
    ctx = _Context(SQLiteDataCache(str(tmp_path), max_size=2000), {"mine_get": {"web.*": [".*"]}})
    handlers = MinionDataHandlers(ctx)   # type: ignore[arg-type]
    for minion_id, grains in GRAINS.items():
        ctx.data.store(minion_id, "grains", grains)
    handlers.mine_store("web1", protocol.MineStore(data={"ip": ["10.0.0.1"]}))
    handlers.mine_store("web1", protocol.MineStore(data={"key": "k1"}))
    assert ctx.data.fetch("web1", "mine") == {"ip": ["10.0.0.1"], "key": "k1"}
    handlers.mine_store("web1", protocol.MineStore(data={"key": "k2"}, clear=True))
    assert ctx.data.fetch("web1", "mine") == {"key": "k2"}
    assert handlers.mine_get("web2", protocol.MineGet(tgt="web1", fun="key")) == protocol.MineData({"web1": "k2"})
    assert handlers.mine_get("db1", protocol.MineGet(tgt="web1", fun="key")) == protocol.MineData({})
    handlers.mine_delete("web1", protocol.MineDelete(fun="key"))
    assert ctx.data.fetch("web1", "mine") == {}
    handlers.mine_store("web1", protocol.MineStore(data={"ip": ["10.0.0.1"]}))
    handlers.mine_flush("web1", protocol.MineFlush())
    assert handlers.mine_get("web2", protocol.MineGet(tgt="*", fun="ip")) == protocol.MineData({})
    handlers.mine_store("web1", protocol.MineStore(data={"ip": ["10.0.0.1"]}))
    with pytest.raises(DataTooLarge, match="mine of web1 would take"):
        handlers.mine_store("web1", protocol.MineStore(data={"blob": "x" * 3000}))
    assert ctx.data.fetch("web1", "mine") is None                    # the stale copy dropped, as for grains
