"""Fixtures: a running master with three accepted minions (torn down whatever happens), and the
master store the store-touching plane tests run on (``master_store``: sqlite, then postgres)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, store_opts

STORES = ("sqlite", "postgres")


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


@pytest.fixture(scope="module", params=STORES)
def master_store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Master options choosing the store: the plane tests that touch keys, jobs, the data cache
    (pillar, grains, mine) run once on SQLite and once on PostgreSQL, so both keep one behaviour."""
    return store_opts(request.param, request.getfixturevalue("postgres") if request.param == "postgres" else None)
