"""Pillar top files across environments (values checked against Salt 3008.3 on the same tree)."""

from __future__ import annotations

import pytest

from tests.unit.helpers import pillar_of, write_tree

ENVS = {"base": ["pillar/base"], "dev": ["pillar/dev"], "prod": ["pillar/prod"]}


@pytest.fixture
def tree(tmp_path):
    files = {
        "pillar/base/top.sls": """
            base:
              '*':
                - b_star
              'web*':
                - order: 5
                - b_web
              'G@os:Debian':
                - order: 1
                - b_deb
            dev:
              '*':
                - d_from_base
            include:
              - moretop
        """,
        "pillar/base/moretop.sls": "base:\n  'L@web01,web02':\n    - b_more\n",
        "pillar/dev/top.sls": """
            base:
              '*':
                - d_overrides_base_star
            dev:
              '*':
                - d_star
            prod:
              '*':
                - p_from_dev
        """,
    }
    for env, names in {"base": ["b_star", "b_web", "b_deb", "b_more", "d_overrides_base_star"],
                       "dev": ["d_from_base", "d_star", "d_overrides_base_star"], "prod": ["p_from_dev"]}.items():
        for name in names:
            files[f"pillar/{env}/{name}.sls"] = f"{name}: 1\nwho: {name}\n"
    write_tree(tmp_path, files)
    return tmp_path


def _pillar(tree, **opts) -> dict:
    return pillar_of(tree, envs=ENVS, grains={"os": "Debian"}, **opts)


def test_top_files_merge_per_environment_and_target(tree) -> None:
    pillar = _pillar(tree)
    # dev's `base: '*'` replaced base's; dev's `dev: '*'` replaced base's; targets sorted by order
    assert pillar == {"d_overrides_base_star": 1, "b_more": 1, "b_deb": 1, "b_web": 1, "d_star": 1,
                      "p_from_dev": 1, "who": "p_from_dev"}
    assert list(pillar) == ["d_overrides_base_star", "who", "b_more", "b_deb", "b_web", "d_star", "p_from_dev"]


def test_env_order(tree) -> None:
    pillar = _pillar(tree, env_order=["prod", "dev", "base"])
    assert pillar["who"] == "b_web"
    assert list(pillar)[0] == "p_from_dev"


@pytest.mark.parametrize(("pillarenv", "expected"), [
    ("dev", {"d_star": 1, "who": "d_star"}),
    ("prod", {}),  # prod has no top file of its own
    ("nope", {}),
])
def test_pillarenv_reads_only_that_environment(tree, pillarenv: str, expected: dict) -> None:
    assert _pillar(tree, pillarenv=pillarenv) == expected


def test_a_minion_matching_nothing_but_star(tree) -> None:
    pillar = pillar_of(tree, envs=ENVS, minion_id="db01", grains={"os": "RedHat"})
    assert pillar == {"d_overrides_base_star": 1, "who": "p_from_dev", "d_star": 1, "p_from_dev": 1}


def test_jinja_in_the_top_file(tmp_path) -> None:
    files = {
        "top.sls": """
            base:
              '*':
                - common
            {% if grains['os'] == 'Debian' %}
                - debian
            {% endif %}
              '{{ grains['id'] }}':
                - own
        """,
        "common.sls": "common: 1\n", "debian.sls": "debian: 1\n", "own.sls": "own: 1\n",
    }
    assert pillar_of(tmp_path, files, grains={"os": "Debian"}) == {"common": 1, "debian": 1, "own": 1}
    assert pillar_of(tmp_path, None, grains={"os": "RedHat"}) == {"common": 1, "own": 1}


@pytest.mark.parametrize(("broken", "expected"), [
    ("base", {}),  # base's top fails first: dev's top is never read
    ("dev", {"b_star": 1}),  # the tops read before the failure are used
])
def test_a_top_file_render_error_stops_reading_further_top_files(tmp_path, broken: str, expected: dict) -> None:
    from tests.unit.helpers import compile_pillar

    files = {"pillar/base/top.sls": "base:\n  '*':\n    - b_star\n", "pillar/base/b_star.sls": "b_star: 1\n",
             "pillar/dev/top.sls": "dev:\n  '*':\n    - d_star\n", "pillar/dev/d_star.sls": "d_star: 1\n"}
    files[f"pillar/{broken}/top.sls"] += "  - broken: [\n"
    write_tree(tmp_path, files)
    result = compile_pillar(tmp_path, envs={"base": ["pillar/base"], "dev": ["pillar/dev"]})
    assert {k: v for k, v in result.pillar.items() if k != "_errors"} == expected
    (message,) = result.pillar["_errors"]
    assert message.startswith("Rendering Primary Top file failed")
