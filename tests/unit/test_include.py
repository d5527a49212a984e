"""Pillar include forms: plain, init.sls, relative, glob, defaults:, key:, and merge order."""

from __future__ import annotations

import pytest

from compiler.errors import MISSING_SLS
from compiler.pillar import resolve_relative
from tests.unit.helpers import compile_pillar, pillar_of


def _top(*sls: str) -> str:
    return "base:\n  '*':\n" + "".join(f"    - {s}\n" for s in sls)


def test_plain_include(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": "include:\n  - common\n  - other.thing\nmain: 1\n",
        "common.sls": "common: 1\n",
        "other/thing.sls": "thing: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"common": 1, "thing": 1, "main": 1}


def test_include_of_a_directory_reads_its_init_sls(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": "include:\n  - pkg\n",
        "pkg/init.sls": "pkg: init\n",
    }
    assert pillar_of(tmp_path, files) == {"pkg": "init"}


def test_a_file_wins_over_a_directory_init(tmp_path) -> None:
    files = {
        "top.sls": _top("pkg"),
        "pkg.sls": "pkg: file\n",
        "pkg/init.sls": "pkg: init\n",
    }
    assert pillar_of(tmp_path, files) == {"pkg": "file"}


@pytest.mark.parametrize(("name", "current", "is_init", "expected"), [
    (".x", "a.b", False, "a.x"),  # from a/b.sls
    (".x", "a", True, "a.x"),  # from a/init.sls
    ("..x", "a.b.c", False, "a.x"),  # from a/b/c.sls
    ("..x", "a.b", True, "a.x"),  # from a/b/init.sls
    ("..x", "a.b", False, "x"),  # from a/b.sls
    (".", "a", True, "a"),  # the package itself
    ("x.y", "a.b", False, "x.y"),  # absolute names are unchanged
])
def test_resolve_relative(name: str, current: str, is_init: bool, expected: str) -> None:
    assert resolve_relative(name, current, is_init) == expected


def test_relative_include_beyond_the_top_is_an_error() -> None:
    with pytest.raises(Exception, match="goes beyond top level package"):
        resolve_relative("...x", "a.b", False)


def test_relative_includes_from_a_file_and_from_an_init(tmp_path) -> None:
    files = {
        "top.sls": _top("app.web", "svc", "deep.er.leaf"),
        "app/web.sls": "include:\n  - .db\nweb: 1\n",  # app.web includes app.db
        "app/db.sls": "db: 1\n",
        "svc/init.sls": "include:\n  - .helper\nsvc: 1\n",  # svc includes svc.helper
        "svc/helper.sls": "helper: 1\n",
        "deep/er/leaf.sls": "include:\n  - ..sibling\nleaf: 1\n",  # deep.er.leaf includes deep.sibling
        "deep/sibling.sls": "sibling: 1\n",
        "deep/er/init.sls": "include:\n  - ..sibling2\ner: 1\n",  # deep.er includes deep.sibling2
        "deep/sibling2.sls": "sibling2: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"db": 1, "web": 1, "helper": 1, "svc": 1, "sibling": 1, "leaf": 1}
    files["top.sls"] = _top("deep.er")
    assert pillar_of(tmp_path, files) == {"sibling2": 1, "er": 1}


def test_relative_include_also_finds_the_name_without_its_dots(tmp_path) -> None:
    # Salt looks `.shared` up as `shared` too: both the top-level and the relative sls are included
    files = {
        "top.sls": _top("app.web"),
        "app/web.sls": "include:\n  - .shared\nweb: 1\n",
        "app/shared.sls": "who: app\napp_shared: 1\n",
        "shared.sls": "who: top\ntop_shared: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"who": "app", "app_shared": 1, "top_shared": 1, "web": 1}


def test_include_with_slashes(tmp_path) -> None:
    files = {"top.sls": _top("main"), "main.sls": "include:\n  - other/thing\nmain: 1\n",
             "other/thing.sls": "thing: 1\n"}
    result = compile_pillar(tmp_path, files)
    assert result.errors == []
    assert result.pillar == {"thing": 1, "main": 1}


def test_relative_include_beyond_the_top_names_the_file(tmp_path) -> None:
    files = {"top.sls": _top("a"), "a.sls": "include:\n  - ..nothing\na: 1\n"}
    result = compile_pillar(tmp_path, files)
    assert result.pillar["a"] == 1
    (err,) = result.errors
    assert "goes beyond top level package" in err.message
    assert err.file == str(tmp_path / "pillar" / "a.sls")
    assert err.line == 1


def test_glob_include(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": "include:\n  - roles.*\nmain: 1\n",
        "roles/web.sls": "roles: {web: 1}\n",
        "roles/db.sls": "roles: {db: 1}\n",
        "roles/cache/init.sls": "roles: {cache: 1}\n",
        "other.sls": "other: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"roles": {"web": 1, "db": 1, "cache": 1}, "main": 1}


def test_glob_in_the_top_file(tmp_path) -> None:
    files = {
        "top.sls": _top("roles.*"),
        "roles/web.sls": "web: 1\n",
        "roles/db.sls": "db: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"web": 1, "db": 1}


def test_include_with_defaults_feeds_jinja(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": """
            include:
              - tmpl:
                  defaults:
                    port: 8080
                    name: web
            main: 1
        """,
        "tmpl.sls": "service:\n  port: {{ port }}\n  name: {{ name }}-{{ grains['id'] }}\n",
    }
    assert pillar_of(tmp_path, files) == {"service": {"port": 8080, "name": "web-web01"}, "main": 1}


def test_include_with_key_nests_the_data(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": """
            include:
              - users:
                  key: accounts:local
              - flat:
                  key: flat
            accounts:
              local:
                root: {uid: 0}
        """,
        "users.sls": "alice: {uid: 1000}\nroot: {uid: 99, shell: /bin/sh}\n",
        "flat.sls": "x: 1\n",
    }
    assert pillar_of(tmp_path, files) == {
        "accounts": {"local": {"alice": {"uid": 1000}, "root": {"uid": 0, "shell": "/bin/sh"}}},
        "flat": {"x": 1},
    }


def test_include_with_key_and_defaults_together(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": "include:\n  - t:\n      key: a:b\n      defaults: {v: 7}\n",
        "t.sls": "v: {{ v }}\n",
    }
    assert pillar_of(tmp_path, files) == {"a": {"b": {"v": 7}}}


def test_relative_include_with_defaults_and_key(tmp_path) -> None:
    # pillar.raw of Salt 3008.3 for this tree: `.db` is looked up as `db` too, and both files get the
    # defaults and land under the key: {"database": {"top_port": 5432, "who": "app", "port": 5432}, "web": 1}
    files = {
        "top.sls": _top("app.web"),
        "app/web.sls": "include:\n  - .db:\n      defaults:\n        port: 5432\n      key: database\nweb: 1\n",
        "app/db.sls": "port: {{ port }}\nwho: app\n",
        "db.sls": "top_port: {{ port }}\nwho: top\n",
    }
    pillar = pillar_of(tmp_path, files)
    assert pillar == {"database": {"top_port": 5432, "who": "app", "port": 5432}, "web": 1}
    assert list(pillar["database"]) == ["top_port", "who", "port"]


@pytest.mark.parametrize(("option", "expected"), [
    ("defaults:\n        v: 7", {"v": 7, "leaf": 1}),
    ("key: 'sib:nested'", {"sib": {"nested": {"v": "none"}}, "leaf": 1}),
])
def test_parent_relative_include_with_defaults_or_key(tmp_path, option: str, expected: dict) -> None:
    # saltpan resolves `..sibling` from deep/er/leaf.sls to deep.sibling, as Salt's state compiler does.
    # Salt 3008.3's pillar does not: it looks for 'deep.er..sibling' and reports "Specified SLS
    # 'deep.er..sibling' in environment 'base' is not available on the salt master".
    files = {
        "top.sls": _top("deep.er.leaf"),
        "deep/er/leaf.sls": f"include:\n  - ..sibling:\n      {option}\nleaf: 1\n",
        "deep/sibling.sls": "v: {{ v | default('none') }}\n",
    }
    assert pillar_of(tmp_path, files) == expected


def test_the_includer_wins_and_later_includes_beat_earlier_ones(tmp_path) -> None:
    files = {
        "top.sls": _top("main"),
        "main.sls": "include:\n  - first\n  - second\nwho: main\nd: {main: 1}\n",
        "first.sls": "who: first\nd: {first: 1, shared: first}\norder: first\n",
        "second.sls": "who: second\nd: {second: 1, shared: second}\norder: second\n",
    }
    pillar = pillar_of(tmp_path, files)
    assert pillar == {"who": "main", "d": {"first": 1, "shared": "second", "second": 1, "main": 1},
                      "order": "second"}
    assert list(pillar) == ["who", "d", "order"]


def test_nested_includes(tmp_path) -> None:
    files = {
        "top.sls": _top("a"),
        "a.sls": "include: [b]\nlevel: a\n",
        "b.sls": "include: [c]\nlevel: b\nb: 1\n",
        "c.sls": "level: c\nc: 1\n",
    }
    assert pillar_of(tmp_path, files) == {"level": "a", "b": 1, "c": 1}


def test_an_sls_included_twice_is_rendered_once(tmp_path) -> None:
    files = {
        "top.sls": _top("a", "b"),
        "a.sls": "include: [shared]\n",
        "b.sls": "include: [shared]\n",
        # a #!py file whose result changes on every call would show a second render
        "shared.sls": "#!py\ncount = []\ndef run():\n    count.append(1)\n    return {'renders': len(count)}\n",
    }
    assert pillar_of(tmp_path, files) == {"renders": 1}


def test_missing_include_is_an_error_naming_the_includer(tmp_path) -> None:
    files = {"top.sls": _top("main"), "main.sls": "main: 1\ninclude:\n  - nope\n"}
    result = compile_pillar(tmp_path, files)
    assert result.pillar["main"] == 1
    (err,) = result.errors
    assert err.kind == MISSING_SLS
    assert err.file == str(tmp_path / "pillar" / "main.sls")
    assert err.line == 2
    assert result.pillar["_errors"] == [
        "Specified SLS 'nope' in environment 'base' is not available on the salt master"]


def test_include_must_be_a_list(tmp_path) -> None:
    files = {"top.sls": _top("main"), "main.sls": "main: 1\ninclude: other\n", "other.sls": "o: 1\n"}
    result = compile_pillar(tmp_path, files)
    assert result.pillar["main"] == 1
    (err,) = result.errors
    assert "not formed as a list" in err.message
    assert (err.file, err.line) == (str(tmp_path / "pillar" / "main.sls"), 2)
