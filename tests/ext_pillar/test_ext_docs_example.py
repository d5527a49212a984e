"""The custom driver walk-through in docs/ext_pillar.md works as written."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from ext_pillar_helpers import compile_pillar, make_opts

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ext_pillar.md")


def _examples() -> dict[str, str]:
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    found = re.findall(r"<!-- example: (\w+) [\w.]+ -->\n```\w+\n(.*?)```", text, re.S)
    return dict(found)


def test_docs_have_the_three_examples():
    assert set(_examples()) == {"driver", "test", "config"}


@pytest.fixture
def driver_path(tmp_path):
    ext = tmp_path / "ext" / "pillar"
    ext.mkdir(parents=True)
    path = ext / "hosts_csv.py"
    path.write_text(_examples()["driver"])
    return str(path)


def test_the_documented_test_passes(tmp_path, driver_path):
    namespace: dict = {}
    exec(compile(_examples()["test"], "docs/ext_pillar.md", "exec"), namespace)  # noqa: S102 - our own docs
    namespace["test_hosts_csv"](tmp_path, driver_path)


def test_the_documented_config_compiles(tmp_path, driver_path):
    config = yaml.safe_load(_examples()["config"])
    table = tmp_path / "hosts.csv"
    table.write_text("web01,rack,r3\nweb01,bad\n")
    config["extension_modules"] = str(tmp_path / "ext")
    config["ext_pillar"][0]["hosts_csv"]["path"] = str(table)
    opts = make_opts(tmp_path, role="master", **config)
    assert compile_pillar(opts, "db01").pillar == {}
    assert compile_pillar(opts, "web01").pillar == {"_errors": [
        f"Failed to load ext_pillar hosts_csv for minion web01: {table}: a row must be minion,key,value, "
        "got ['web01', 'bad']"]}
    table.write_text("web01,rack,r3\n")
    assert compile_pillar(opts, "web01").pillar == {"hosts": {"rack": "r3"}}
