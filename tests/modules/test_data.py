"""pillar.*, match.* and slsutil.* through saltpan call, on the minion's own pillar tree
(app: {port: 8080, users: [alice, bob]}) and grains (roles [web, db], datacenter ams1)."""

from __future__ import annotations

from tests.modules.conftest import Minion


def test_pillar(minion: Minion) -> None:
    assert minion.call("pillar.get", "app:port") == 8080
    assert minion.call("pillar.get", "app:nope", "dflt") == "dflt"
    assert minion.call("pillar.get", "nope") == ""
    assert minion.call("pillar.get", "app", "{tls: true}", "merge=True") == {
        "tls": True, "port": 8080, "users": ["alice", "bob"]}
    assert minion.call("pillar.fetch", "app:users:1") == "bob"
    assert minion.call("pillar.item", "app", "nope") == {"app": {"port": 8080, "users": ["alice", "bob"]}, "nope": ""}
    assert minion.call("pillar.items") == {"app": {"port": 8080, "users": ["alice", "bob"]}}
    assert minion.call("pillar.data") == minion.call("pillar.items")
    assert minion.call("pillar.items", "pillar={extra: 1}")["extra"] == 1
    assert minion.call("pillar.raw") == {"app": {"port": 8080, "users": ["alice", "bob"]}}
    assert minion.call("pillar.raw", "nope") == {}
    assert minion.call("pillar.ls") == ["app"]
    assert minion.call("pillar.keys", "app") == ["port", "users"]
    assert "Pillar value in key app:port is not a dict" in minion.error("pillar.keys", "app:port")
    assert minion.call("pillar.obfuscate") == {"app": {"port": "<int>", "users": ["<str>", "<str>"]}}
    minion.write("pillar", "data.sls", "app:\n  port: 8080\n  users: [alice, bob]\nflavour: mint\n")
    assert minion.call("pillar.filter_by", "{mint: {colour: green}, default: {colour: grey}}", "flavour") == {
        "colour": "green"}
    assert minion.call("pillar.file_exists", "data.sls") is True
    assert minion.call("pillar.file_exists", "nope.sls") is False


def test_match(minion: Minion) -> None:
    assert minion.call("match.glob", "test*") is True
    assert minion.call("match.glob", "web*") is False
    assert minion.call("match.pcre", "^te.t") is True
    assert minion.call("match.list", "a,tester,b") is True
    assert minion.call("match.grain", "roles:db") is True
    assert minion.call("match.grain_pcre", "datacenter:ams[0-9]") is True
    assert minion.call("match.pillar", "app:port:8080") is True
    assert minion.call("match.pillar_pcre", "app:users:b.b") is True
    assert minion.call("match.ipcidr", "10.1.0.0/16") is True
    assert minion.call("match.ipcidr", "192.168.0.0/16") is False
    assert minion.call("match.compound", "G@roles:web and I@app:port:8080 and not L@other") is True
    assert minion.call("match.compound", "G@roles:mail or E@^x") is False
    assert minion.call("match.data", "anything") is False
    assert minion.call("match.filter_by", "{'G@roles:web': web-config, '*': other}") == "web-config"
    assert minion.call("match.filter_by", "{'G@roles:mail': mail, '*': other}") == "other"
    assert minion.call("match.search_by", "{web: ['G@roles:web'], mail: ['G@roles:mail'], any: ['*']}") == [
        "web", "any"]


def test_slsutil(minion: Minion) -> None:
    assert minion.call("slsutil.update", "{a: {b: 1}}", "{a: {c: 2}}") == {"a": {"b": 1, "c": 2}}
    assert minion.call("slsutil.merge", "{a: [1]}", "{a: [2]}", "merge_lists=True") == {"a": [1, 2]}
    assert minion.call("slsutil.merge_all", "[{a: 1}, {b: 2}, {a: 3}]") == {"a": 3, "b": 2}
    assert minion.call("slsutil.serialize", "json", "{a: 1}") == '{"a": 1}'
    assert minion.call("slsutil.serialize", "yaml", "{a: [1, 2]}") == "a: [1, 2]"   # as Salt 3008
    assert minion.call("slsutil.deserialize", "yaml", "'a: [1, 2]'") == {"a": [1, 2]}   # a quoted YAML string
    assert "nope" in minion.error("slsutil.serialize", "nope", "{a: 1}")
    assert minion.call("slsutil.boolstr", "true") == "true"
    assert minion.call("slsutil.boolstr", "false", "enabled", "disabled") == "disabled"
    banner = minion.call("slsutil.banner", "width=40")
    assert banner.splitlines()[0] == "#" * 40 and "THIS FILE IS MANAGED BY SALT" in banner
    minion.write("states", "app/files/app.conf", "x\n")
    minion.write("states", "app/init.sls", "{}\n")
    assert minion.call("slsutil.file_exists", "app/files/app.conf") is True
    assert minion.call("slsutil.file_exists", "app/files") is False
    assert minion.call("slsutil.dir_exists", "app/files") is True
    assert minion.call("slsutil.path_exists", "app") is True
    assert minion.call("slsutil.path_exists", "nope") is False
    assert minion.call("slsutil.findup", "app/files", "init.sls") == "app/init.sls"
