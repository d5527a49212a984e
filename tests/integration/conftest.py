"""Fixtures: a running master with three accepted minions (torn down whatever happens)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster


def write_trees(base: Path) -> None:
    (base / "pillar").mkdir(parents=True, exist_ok=True)
    (base / "states").mkdir(parents=True, exist_ok=True)
    (base / "pillar" / "top.sls").write_text("base:\n  '*':\n    - common\n")
    (base / "pillar" / "common.sls").write_text("app:\n  port: 8080\n  owner: {{ grains['id'] }}\n")
    (base / "states" / "top.sls").write_text("base:\n  '*':\n    - app\n")
    (base / "states" / "app.conf.j2").write_text("port={{ pillar['app']['port'] }} id={{ grains['id'] }}\n")
    (base / "states" / "app.sls").write_text(
        "app_dir:\n  file.directory:\n    - name: {{ grains['sandbox'] }}/app\n    - makedirs: True\n"
        "app_conf:\n  file.managed:\n    - name: {{ grains['sandbox'] }}/app/app.conf\n"
        "    - source: salt://app.conf.j2\n    - template: jinja\n    - require:\n      - file: app_dir\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("cluster")
    write_trees(base)
    cl = Cluster(base)
    cl.add_minion("web01", {"role": "web", "os": "Debian"})
    cl.add_minion("web02", {"role": "web", "os": "Debian"})
    cl.add_minion("db01", {"role": "db", "os": "RedHat"})
    with cl.running():
        yield cl
