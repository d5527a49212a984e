"""The Salt mine through a real master and three real minions (issue 15).

web1 and web2 carry the grain ``roles: [web]``, db1 ``roles: [db]``; each has its own address
(a static ``ipv4`` grain, which ``network.ip_addrs`` reads).  ``mine_functions`` comes from pillar.
The master's ``mine_get`` ACL lets ``web<N>`` minions read every function and nobody else anything.
A state renders an haproxy backend list from
``salt['mine.get']('roles:web', 'network.ip_addrs', tgt_type='grain')``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtime import modules
from tests.integration.cluster import Cluster, wait_for

ADDRESSES = {"web1": "10.0.0.1", "web2": "10.0.0.2", "db1": "10.0.0.3"}

HAPROXY_SLS = """\
haproxy_cfg:
  file.managed:
    - name: {{ grains['sandbox'] }}/haproxy.cfg
    - makedirs: True
    - contents: |
        backend web
        {%- for server, addrs in salt['mine.get']('roles:web', 'network.ip_addrs', tgt_type='grain') | dictsort %}
            server {{ server }} {{ addrs[0] }}:80 check
        {%- endfor %}
        # peers
        {%- for server, addrs in salt['mine.get']('roles:web', 'network.ip_addrs', tgt_type='grain',
                                                  exclude_minion=True) | dictsort %}
            peer {{ server }} {{ addrs | join(',') }}
        {%- endfor %}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("mine")
    (base / "pillar").mkdir()
    (base / "pillar" / "top.sls").write_text("base:\n  '*':\n    - mine\n")
    (base / "pillar" / "mine.sls").write_text("mine_functions:\n  network.ip_addrs: []\n"
                                             "  roles:\n    - mine_function: grains.get\n    - roles\n")
    (base / "states").mkdir()
    (base / "states" / "haproxy.sls").write_text(HAPROXY_SLS)
    (base / "states" / "_modules").mkdir()
    (base / "states" / "_modules" / "rack.py").write_text(
        "def location():\n    return __grains__['id'] + '@' + __salt__['grains.get']('roles')[0]\n")
    c = Cluster(base, master_opts={"mine_get": {"web[0-9]+$": [".*"]}})
    for minion_id, address in ADDRESSES.items():
        role = "db" if minion_id.startswith("db") else "web"
        c.add_minion(minion_id, grains={"roles": [role], "ipv4": ["127.0.0.1", address]})
    with c.running():
        yield c


def _update_all(cluster: Cluster) -> None:
    updated = cluster.run_json("*", "mine.update")
    assert updated == dict.fromkeys(ADDRESSES, True), updated


def test_mine_update_then_a_template_lists_the_web_servers(cluster: Cluster) -> None:
    _update_all(cluster)
    applied = cluster.run_json("-L", "web1,db1", "state.apply", "haproxy", timeout=120)
    for minion_id in ("web1", "db1"):
        (result,) = applied[minion_id].values()
        assert result["result"] is True, (minion_id, result)
    web1 = (cluster.base / "sandbox-web1" / "haproxy.cfg").read_text()
    assert "server web1 10.0.0.1:80 check" in web1 and "server web2 10.0.0.2:80 check" in web1
    assert "server db1" not in web1                               # not a web server
    assert "peer web2 10.0.0.2" in web1 and "peer web1" not in web1   # exclude_minion
    db1 = (cluster.base / "sandbox-db1" / "haproxy.cfg").read_text()
    assert db1.split() == ["backend", "web", "#", "peers"], db1   # outside mine_get: nothing


def test_mine_get_from_the_command_line_and_the_acl(cluster: Cluster) -> None:
    _update_all(cluster)
    got = cluster.run_json("web2", "mine.get", "*", "network.ip_addrs")
    assert got == {"web2": {minion: [address] for minion, address in ADDRESSES.items()}}
    several = cluster.run_json("web1", "mine.get", "roles:db", "network.ip_addrs,roles", "grain")
    assert several == {"web1": {"network.ip_addrs": {"db1": ["10.0.0.3"]}, "roles": {"db1": ["db"]}}}
    listed = cluster.run_json("web1", "mine.get", "web1,db1", "roles", "list")
    assert listed == {"web1": {"web1": ["web"], "db1": ["db"]}}
    assert cluster.run_json("db1", "mine.get", "*", "network.ip_addrs") == {"db1": {}}


def test_allow_tgt_send_delete_and_flush(cluster: Cluster) -> None:
    _update_all(cluster)
    sent = cluster.run_json("web2", "mine.send", "private", "mine_function=grains.get", "sandbox",
                            "allow_tgt=web1")
    assert sent == {"web2": True}
    assert cluster.run_json("web1", "mine.get", "web2", "private")["web1"] == {
        "web2": str(cluster.base / "sandbox-web2")}
    assert cluster.run_json("web2", "mine.get", "web2", "private") == {"web2": {}}   # allow_tgt: web1 only
    assert cluster.run_json("web2", "mine.delete", "private") == {"web2": True}
    assert cluster.run_json("web1", "mine.get", "web2", "private") == {"web1": {}}
    assert cluster.run_json("web2", "mine.flush") == {"web2": True}
    assert cluster.run_json("web1", "mine.get", "*", "network.ip_addrs")["web1"] == {
        "web1": ["10.0.0.1"], "db1": ["10.0.0.3"]}
    _update_all(cluster)
    assert "web2" in cluster.run_json("web1", "mine.get", "*", "network.ip_addrs")["web1"]


def test_the_minion_updates_its_mine_on_start(cluster: Cluster) -> None:
    """mine_interval's first run happens once the minion registered (Salt's run_on_start): a
    restarted minion's mine is there again without anyone calling mine.update."""
    assert cluster.run_json("db1", "mine.flush") == {"db1": True}
    cluster.minions["db1"].stop()
    cluster.minions["db1"].start()
    cluster.wait_ping(["db1"])

    def back() -> bool:
        return cluster.run_json("web1", "mine.get", "db1", "network.ip_addrs").get("web1") == {"db1": ["10.0.0.3"]}

    wait_for(back, 30, interval=0.5, what="db1's mine after its restart")


def test_sys_list_functions_lists_every_execution_function(cluster: Cluster) -> None:
    listed = cluster.run_json("*", "sys.list_functions")
    assert set(listed) == set(ADDRESSES)
    for minion_id, functions in listed.items():
        assert functions == modules.list_functions(), minion_id


def test_a_malformed_target_is_a_clear_error(cluster: Cluster) -> None:
    got = cluster.run_json("web1", "mine.get", "G@roles:web and (", "network.ip_addrs", "compound")
    assert got["web1"].startswith("ERROR: the master refused _mine_get: invalid compound target"), got


def test_custom_modules_synced_from_the_master_feed_the_mine(cluster: Cluster) -> None:
    synced = cluster.run_json("*", "saltutil.sync_modules")
    assert synced == dict.fromkeys(ADDRESSES, ["modules.rack"])
    assert cluster.run_json("web1", "rack.location") == {"web1": "web1@web"}
    assert cluster.run_json("db1", "mine.send", "location", "mine_function=rack.location") == {"db1": True}
    assert cluster.run_json("web2", "mine.get", "db1", "location") == {"web2": {"db1": "db1@db"}}
