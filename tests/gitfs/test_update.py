"""Updating the configured remotes: due intervals, Salt's backend= selection, the remotes filter, the
salt/fileserver/gitfs/update event's data, the master's GitfsUpdate pass, masterless warnings."""

from __future__ import annotations

import os
import time

import pytest

from runtime.gitfs import update as gitfs_update
from runtime.gitfs.remotes import GitConfigError
from runtime.master import gitfs_updater
from tests.netutil import free_port


def opts_for(tmp_path, repos: dict, **extra) -> dict:
    opts = {"cachedir": str(tmp_path / "cache"), "fileserver_backend": ["roots", "gitfs"], "file_roots": {},
            "gitfs_remotes": [{repos["states"]: [{"root": "salt"}]},
                              {repos["formulas"]: [{"mountpoint": "formulas"}, {"update_interval": 5}]}],
            "gitfs_update_interval": 100, "git_pillar_update_interval": 50,
            "ext_pillar": [{"git": [f"__env__ {repos['pillar']}"]}]}
    opts.update(extra)
    return opts


class Events:
    def __init__(self) -> None:
        self.fired: list[tuple[str, dict]] = []

    def fire(self, tag: str, data: dict) -> None:
        self.fired.append((tag, data))


def test_each_remote_is_fetched_when_its_interval_has_passed(tmp_path, repos) -> None:
    opts = opts_for(tmp_path, repos, fileserver_events=True)
    events = Events()
    first = gitfs_updater.update_pass(opts, events)  # type: ignore[arg-type]
    assert [r.remote.role for r in first] == ["gitfs", "gitfs", "git_pillar"] and all(r.ok for r in first)
    assert events.fired == [("salt/fileserver/gitfs/update", {"changed": True, "backend": "gitfs", "errors": []})]
    assert gitfs_updater.update_pass(opts, events) == []  # nothing due
    now = time.time()
    due = [r.remote.display_url for r in gitfs_update.update(opts, only_due=True, now=now + 6)]
    assert due == [repos["formulas"]]  # its own update_interval: 5 s
    later = gitfs_update.update(opts, only_due=True, now=now + 60)  # git_pillar_update_interval: 50 s
    assert [(r.remote.role, r.remote.display_url) for r in later] == [("gitfs", repos["formulas"]),
                                                                      ("git_pillar", repos["pillar"])]
    assert not any(r.changed for r in later)


def test_a_failing_remote_is_reported_and_the_others_fetched(tmp_path, repos) -> None:
    gone = f"git://127.0.0.1:{free_port()}/gone.git"
    opts = opts_for(tmp_path, repos, fileserver_events=True,
                    gitfs_remotes=[gone, {repos["formulas"]: [{"mountpoint": "formulas"}]}])
    events = Events()
    results = gitfs_updater.update_pass(opts, events)  # type: ignore[arg-type]
    assert [r.ok for r in results] == [False, True, True]
    ((tag, data),) = events.fired
    assert data["changed"] is True and len(data["errors"]) == 1
    assert data["errors"][0].startswith(f"gitfs remote '{gone}': fetch failed:")
    opts["fileserver_events"] = False
    events.fired.clear()
    gitfs_update.update(opts)  # a pass without fileserver_events fires nothing
    gitfs_updater.update_pass({**opts, "gitfs_update_interval": 1}, events)  # type: ignore[arg-type]
    assert events.fired == []


def test_salts_backend_argument(tmp_path, repos) -> None:
    opts = opts_for(tmp_path, repos)
    assert gitfs_update.select_backends(opts, []) == ["roots", "gitfs"]
    assert gitfs_update.select_backends(opts, ["git"]) == ["gitfs"]
    assert gitfs_update.select_backends(opts, ["roots,gitfs"]) == ["roots", "gitfs"]
    assert gitfs_update.select_backends(opts, ["-roots"]) == ["gitfs"]
    assert gitfs_update.select_backends(opts, ["git_pillar"]) == ["git_pillar"]
    with pytest.raises(GitConfigError, match="backend hgfs is not configured on this master"):
        gitfs_update.select_backends(opts, ["hgfs"])
    with pytest.raises(GitConfigError, match="not both"):
        gitfs_update.select_backends(opts, ["gitfs,-roots"])
    without = {**opts, "ext_pillar": []}
    with pytest.raises(GitConfigError, match="configured: roots, gitfs\\)"):
        gitfs_update.select_backends(without, ["git_pillar"])


def test_the_remotes_filter_and_the_roles(tmp_path, repos) -> None:
    opts = opts_for(tmp_path, repos)
    only = gitfs_update.update(opts, remotes=["*formulas*"])
    assert [r.remote.display_url for r in only] == [repos["formulas"]]
    pillar = gitfs_update.update(opts, roles=["git_pillar"])
    assert [r.remote.role for r in pillar] == ["git_pillar"]
    assert gitfs_update.update(opts, roles=["gitfs"], remotes=["nomatch*"]) == []


def test_masterless_warnings_name_the_remote(tmp_path, repos) -> None:
    opts = opts_for(tmp_path, repos)
    assert gitfs_update.masterless_fetch(opts) == []
    states_git = repos["states"][len("file://"):]
    os.rename(states_git, states_git + ".moved")
    warnings = gitfs_update.masterless_fetch(opts)
    assert any(w.startswith(f"gitfs remote '{repos['states']}': fetch failed:") for w in warnings)
    assert any(f"gitfs remote '{repos['states']}': serving the last good revision fetched" in w for w in warnings)
