"""Merge strategies (pillar_source_merging_strategy) and pillar_merge_lists, through the compiler."""

from __future__ import annotations

import copy

import pytest

from compiler import merge
from tests.unit.helpers import pillar_of

TWO_SLS = {
    "top.sls": """
        base:
          '*':
            - a
            - b
    """,
    "a.sls": """
        d: {x: 1, y: 1, sub: {p: 1}, l: [a]}
        l: [1, 2]
        s: a
        onlya: 1
    """,
    "b.sls": """
        d: {y: 2, z: 2, sub: {q: 2}, l: [a, b]}
        l: [2, 3]
        s: b
        onlyb: 2
    """,
}

RECURSED = {"d": {"x": 1, "y": 2, "sub": {"p": 1, "q": 2}, "l": ["a", "b"], "z": 2},
            "l": [2, 3], "s": "b", "onlya": 1, "onlyb": 2}
RECURSED_LISTS = {**RECURSED, "l": [1, 2, 3]}
WHOLESALE = {"d": {"y": 2, "z": 2, "sub": {"q": 2}, "l": ["a", "b"]},
             "l": [2, 3], "s": "b", "onlya": 1, "onlyb": 2}


@pytest.mark.parametrize(("strategy", "merge_lists", "expected"), [
    ("smart", False, RECURSED),
    ("recurse", False, RECURSED),
    ("smart", True, RECURSED_LISTS),
    ("recurse", True, RECURSED_LISTS),
    ("aggregate", False, WHOLESALE),
    ("aggregate", True, WHOLESALE),
    ("overwrite", False, WHOLESALE),
    ("overwrite", True, WHOLESALE),
    ("none", False, RECURSED),
    ("none", True, RECURSED),  # Salt's "none" merges like recurse and ignores pillar_merge_lists
])
def test_strategies_like_salt(tmp_path, strategy: str, merge_lists: bool, expected: dict) -> None:
    # the expected values are what salt-call --local pillar.raw gives for this tree (Salt 3008.3)
    pillar = pillar_of(tmp_path, TWO_SLS, pillar_source_merging_strategy=strategy,
                       pillar_merge_lists=merge_lists)
    assert pillar == expected


def test_default_strategy_is_smart(tmp_path) -> None:
    assert pillar_of(tmp_path, TWO_SLS) == RECURSED


def test_list_strategy_collects_colliding_values(tmp_path) -> None:
    # saltpan deviation: Salt 3008's "list" strategy yields an empty pillar (a bug); saltpan does what
    # its name says: a colliding value becomes [old, new], lists are concatenated
    pillar = pillar_of(tmp_path, TWO_SLS, pillar_source_merging_strategy="list")
    assert pillar == {
        "d": [{"x": 1, "y": 1, "sub": {"p": 1}, "l": ["a"]}, {"y": 2, "z": 2, "sub": {"q": 2}, "l": ["a", "b"]}],
        "l": [1, 2, 2, 3],
        "s": ["a", "b"],
        "onlya": 1,
        "onlyb": 2,
    }


def test_merge_lists_appends_only_missing_items_in_order(tmp_path) -> None:
    files = {
        "top.sls": "base:\n  '*':\n    - a\n    - b\n    - c\n",
        "a.sls": "users: [root, admin]\nnested: {pkgs: [vim]}\n",
        "b.sls": "users: [admin, deploy, root]\nnested: {pkgs: [git, vim]}\n",
        "c.sls": "users: [backup]\nnested: {pkgs: {not: a list}}\n",
    }
    pillar = pillar_of(tmp_path, files, pillar_merge_lists=True)
    assert pillar["users"] == ["root", "admin", "deploy", "backup"]
    # a list meeting a dict is replaced, as in Salt
    assert pillar["nested"] == {"pkgs": {"not": "a list"}}


def test_later_sls_in_the_top_file_wins(tmp_path) -> None:
    files = {
        "top.sls": "base:\n  'web*':\n    - b\n  '*':\n    - a\n",
        "a.sls": "who: a\n",
        "b.sls": "who: b\n",
    }
    assert pillar_of(tmp_path, files) == {"who": "a"}


def test_includes_merge_with_the_strategy(tmp_path) -> None:
    files = {
        "top.sls": "base:\n  '*':\n    - main\n",
        "main.sls": "include:\n  - inc\nd: {mine: 1}\n",
        "inc.sls": "d: {theirs: 1}\n",
    }
    assert pillar_of(tmp_path, files) == {"d": {"theirs": 1, "mine": 1}}
    assert pillar_of(tmp_path, None, pillar_source_merging_strategy="overwrite") == {"d": {"mine": 1}}


MULTI_ENV = {
    "pillar/base/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - devonly\n",
    "pillar/base/common.sls": "where: base\nd: {base: 1}\n",
    "pillar/dev/top.sls": "dev:\n  '*':\n    - devonly\n",
    "pillar/dev/devonly.sls": "where: dev\nd: {dev: 1}\n",
}


def test_several_environments_merge_in_order(tmp_path) -> None:
    from tests.unit.helpers import write_tree

    write_tree(tmp_path, MULTI_ENV)
    envs = {"base": ["pillar/base"], "dev": ["pillar/dev"]}
    assert pillar_of(tmp_path, envs=envs) == {"where": "dev", "d": {"base": 1, "dev": 1}}


def test_none_strategy_reads_only_the_base_top_file(tmp_path) -> None:
    from tests.unit.helpers import write_tree

    write_tree(tmp_path, {
        **MULTI_ENV,
        "pillar/base/top.sls": "base:\n  '*':\n    - common\n",
        "pillar/dev/top.sls": "dev:\n  '*':\n    - devonly\n",
    })
    envs = {"base": ["pillar/base"], "dev": ["pillar/dev"]}
    assert pillar_of(tmp_path, envs=envs) == {"where": "dev", "d": {"base": 1, "dev": 1}}
    assert pillar_of(tmp_path, envs=envs, pillar_source_merging_strategy="none") == {
        "where": "base", "d": {"base": 1}}


# -- the merge functions themselves ---------------------------------------------------------

def test_merge_never_modifies_its_arguments() -> None:
    old = {"a": {"b": [1]}, "c": 1}
    new = {"a": {"b": [2], "d": {"e": 1}}, "c": 2}
    snapshot = copy.deepcopy((old, new))
    for strategy in merge.STRATEGIES:
        out = merge.merge(old, new, strategy, merge_lists=True)
        assert (old, new) == snapshot
        out_inner = out["a"] if isinstance(out["a"], dict) else out["a"][-1]
        out_inner["d"]["e"] = 99  # the result shares no structure with new
        assert new["a"]["d"]["e"] == 1


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="unknown merge strategy 'bogus'"):
        merge.merge({}, {}, "bogus")


def test_nest_under() -> None:
    assert merge.nest_under("a:b:c", {"x": 1}) == {"a": {"b": {"c": {"x": 1}}}}
    assert merge.nest_under("a", [1]) == {"a": [1]}
    assert merge.nest_under("a|b", 1, delimiter="|") == {"a": {"b": 1}}
