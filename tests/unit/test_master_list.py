"""Salt's master list for failover (issue 21): master_type, random_master, master_failback."""

from __future__ import annotations

import random

import pytest

from runtime.config import ConfigError
from runtime.minion.masters import MasterList


def hosts(masters: MasterList) -> list[str]:
    return [m.host for m in masters.masters]


def test_str_uses_the_first_address_only() -> None:
    masters = MasterList.from_opts({"master": ["a", "b"]})
    assert hosts(masters) == ["a"] and not masters.failover
    assert masters.unreachable().host == "a"
    single = MasterList.from_opts({"master": "m1", "master_port": 5000, "publish_port": 5001})
    assert single.current.ret_address == "tcp://m1:5000" and single.current.pub_address == "tcp://m1:5001"
    assert MasterList.from_opts({}).current.host == "127.0.0.1"


def test_failover_moves_round_the_list_and_recycles_it() -> None:
    masters = MasterList.from_opts({"master": ["a", "b", "c"], "master_type": "failover"})
    assert masters.failover and masters.current.host == "a"
    assert [masters.unreachable().host for _ in range(4)] == ["b", "c", "a", "b"]
    assert not masters.failback_due()


def test_host_port_entries_and_a_single_string_under_failover() -> None:
    masters = MasterList.from_opts({"master": ["a:4600", "b"], "master_type": "failover", "master_port": 4506})
    assert [(m.host, m.ret_port) for m in masters.masters] == [("a", 4600), ("b", 4506)]
    assert not MasterList.from_opts({"master": "a", "master_type": "failover"}).failover  # one master


def test_random_master_shuffles_and_failback_keeps_the_first() -> None:
    names = [f"m{i}" for i in range(8)]
    shuffled = MasterList.from_opts({"master": names, "master_type": "failover", "random_master": True},
                                    rng=random.Random(1))
    assert sorted(hosts(shuffled)) == names and hosts(shuffled) != names
    kept = MasterList.from_opts({"master": names, "master_type": "failover", "random_master": True,
                                 "master_failback": True}, rng=random.Random(1))
    assert hosts(kept)[0] == "m0" and sorted(hosts(kept)) == names and hosts(kept) != names


def test_failback_is_due_away_from_the_first_master() -> None:
    masters = MasterList.from_opts({"master": ["a", "b"], "master_type": "failover", "master_failback": True})
    assert not masters.failback_due()
    masters.unreachable()
    assert masters.failback_due() and masters.top.host == "a"
    assert masters.back_to_top().host == "a" and not masters.failback_due()
    assert masters.failback_interval({}, 5.0) == 15.0
    assert masters.failback_interval({"master_alive_interval": 4}, 5.0) == 4.0
    assert masters.failback_interval({"master_alive_interval": 4, "master_failback_interval": 9}, 5.0) == 9.0
    assert not MasterList.from_opts({"master": ["a", "b"], "master_failback": True}).failback  # str


@pytest.mark.parametrize(("opts", "words"), [
    ({"master_type": "func"}, "master_type"),
    ({"master": []}, "empty list"),
    ({"master": ["a", ""], "master_type": "failover"}, "non-empty string"),
    ({"master": ["a:x"], "master_type": "failover"}, "no valid port"),
    ({"master": ["a b"]}, "not an IPv4 address"),
])
def test_bad_master_settings_name_the_key(opts: dict, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        MasterList.from_opts({"conf_file": "/etc/salt/minion", **opts})
    assert words in str(err.value) and "/etc/salt/minion" in str(err.value)


def test_source_address_and_ports_go_into_both_connections() -> None:
    """Salt's source_address / source_ret_port / source_publish_port: ZeroMQ's ``source;target`` form."""
    master = MasterList.from_opts({"master": "10.0.0.1", "master_port": 4506, "publish_port": 4505,
                                   "source_address": "10.0.0.9", "source_ret_port": 4700}).current
    assert master.ret_address == "tcp://10.0.0.9:4700;10.0.0.1:4506"
    assert master.pub_address == "tcp://10.0.0.9:0;10.0.0.1:4505"


@pytest.mark.parametrize("source", ["eth0", "10.0.0", "10.0.0.256", "::1"])
def test_a_bad_source_address_names_the_option(source: str) -> None:
    with pytest.raises(ConfigError, match="option 'source_address'.*IPv4"):
        MasterList.from_opts({"master": "10.0.0.1", "source_address": source, "conf_file": "/etc/minion"})
