"""state.*, user.* and group.* through saltpan call (masterless, the minion's own trees)."""

from __future__ import annotations

import grp
import os
import pwd

from tests.modules.conftest import Minion

WEB_SLS = """\
include:
  - common

site_dir:
  file.directory:
    - name: {{ grains['sandbox'] }}/site
    - require:
      - test: common_ready

index:
  file.managed:
    - name: {{ grains['sandbox'] }}/site/index.html
    - contents: port {{ pillar['app']['port'] }}
    - require:
      - file: site_dir
"""


def _tree(minion: Minion) -> None:
    minion.write("states", "top.sls", "base:\n  '*':\n    - web\n")
    minion.write("states", "web.sls", WEB_SLS)
    minion.write("states", "common.sls", "common_ready:\n  test.succeed_without_changes: []\n")


def test_state_runs(minion: Minion) -> None:
    _tree(minion)
    predicted = minion.call("state.highstate", "test=True")
    assert all(r["result"] in (True, None) for r in predicted.values())
    assert not (minion.sandbox / "site").exists()
    ran = minion.call("state.highstate")
    assert all(r["result"] is True for r in ran.values()) and len(ran) == 3
    assert (minion.sandbox / "site" / "index.html").read_text() == "port 8080\n"
    again = minion.call("state.sls", "web")
    assert all(not r["changes"] for r in again.values())
    failed = minion.call("state.single", "file.managed", "relative/path", "contents=x", rc=1)   # a failed state: exit 1 (docs/cli.md)
    (only,) = failed.values()
    assert only["result"] is False and "absolute" in only["comment"]
    assert minion.call("state.apply", "common")["test_|-common_ready_|-common_ready_|-succeed_without_changes"][
        "result"] is True


def test_state_views(minion: Minion) -> None:
    _tree(minion)
    assert minion.call("state.show_top") == {"base": ["web"]}
    high = minion.call("state.show_highstate")
    assert set(high) == {"common_ready", "site_dir", "index"} and high["index"]["__sls__"] == "web"
    low = minion.call("state.show_lowstate")
    assert [chunk["__id__"] for chunk in low] == ["common_ready", "site_dir", "index"]
    sls = minion.call("state.show_sls", "common")
    assert list(sls) == ["common_ready"] and sls["common_ready"]["__sls__"] == "common"
    (error,) = minion.call("state.show_sls", "missing")
    assert error.startswith("No matching sls found for 'missing' in env 'base'")   # Salt's words


def test_accounts(minion: Minion) -> None:
    root = minion.call("user.info", "root")
    assert (root["uid"], root["gid"], root["home"]) == (0, 0, pwd.getpwnam("root").pw_dir)
    assert "root" in root["groups"]
    assert minion.call("user.info", "no-such-user-xyz") == {}
    assert minion.call("user.list_users") == sorted(p.pw_name for p in pwd.getpwall())
    assert "root" in minion.call("user.list_groups", "root")
    assert minion.call("user.primary_group", "root") == grp.getgrgid(0).gr_name
    assert {u["name"] for u in minion.call("user.getent")} == {p.pw_name for p in pwd.getpwall()}
    assert minion.call("group.info", "root") == {"name": "root", "passwd": grp.getgrnam("root").gr_passwd, "gid": 0,
                                                 "members": list(grp.getgrnam("root").gr_mem)}
    assert minion.call("group.info", "no-such-group-xyz") == {}
    assert {g["name"] for g in minion.call("group.getent")} == {g.gr_name for g in grp.getgrall()}
    me = pwd.getpwuid(os.getuid()).pw_name
    assert minion.call("user.info", me)["uid"] == os.getuid()
