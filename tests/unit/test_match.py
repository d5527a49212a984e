"""Target matchers (compiler/match.py) and their use from top files."""

from __future__ import annotations

import pytest

from compiler.errors import MATCH_ERROR
from compiler.match import (
    MatchError,
    Minion,
    compound_match,
    expand_nodegroup,
    match_one,
    nodegroup_match,
    traverse,
)
from tests.unit.helpers import compile_pillar

WEB = Minion(
    "web01",
    grains={
        "os": "Debian",
        "os_family": "Debian",
        "roles": ["web", "cache"],
        "deep": {"a": {"b": "leaf"}},
        "mounts": [{"path": "/srv", "fs": "ext4"}],
        "ports": [80, 443],
        "ipv4": ["10.0.0.5", "127.0.0.1"],
        "ipv6": ["::1", "2001:db8::5"],
        "url": "http://x",
    },
    pillar={"role": "web", "tags": ["a", "b"], "app": {"tier": "Front"}, "version": "1.10"},
)
DB = Minion("db01", grains={"os": "RedHat", "roles": ["db"], "ipv4": ["10.1.0.7"]},
            pillar={"role": "db"})
NODEGROUPS = {
    "webs": "web*",
    "names": "web01 db02",
    "name_list": ["db01", "db02"],
    "regexy": "(web|db)0[0-9]",
    "debian": "G@os:Debian",
    "frontends": ["N@webs", "or", "G@roles:lb"],
    "nested": "N@frontends and not N@dbs",
    "dbs": "db*",
    "loop_a": "N@loop_b",
    "loop_b": "N@loop_a",
}


def test_traverse_nested_dicts_lists_and_indexes() -> None:
    assert traverse(WEB.grains, "deep:a:b") == "leaf"
    assert traverse(WEB.grains, "mounts:path") == "/srv"
    assert traverse(WEB.grains, "roles:1") == "cache"
    assert traverse(WEB.grains, "deep|a", delimiter="|") == {"b": "leaf"}
    assert traverse(WEB.grains, "deep:x", "dflt") == "dflt"


# -- simple matchers ------------------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "web", "db"), [
    ("*", True, True),
    ("web*", True, False),
    ("web0[1-3]", True, False),
    ("web0[!1]", False, False),
    ("web??", True, False),
    ("WEB01", False, False),  # the minion id glob is case-sensitive
    ("*01", True, True),
])
def test_glob(pattern: str, web: bool, db: bool) -> None:
    assert match_one("glob", pattern, WEB) is web
    assert match_one("glob", pattern, DB) is db


def test_pcre_is_anchored_at_the_start_only() -> None:
    assert match_one("pcre", r"web\d+", WEB)
    assert match_one("pcre", "eb01", WEB) is False
    assert match_one("pcre", "web0", WEB)
    assert match_one("pcre", "web0$", WEB) is False
    assert match_one("pcre", "(web|db)01$", DB)


def test_pcre_invalid_regex_is_an_error() -> None:
    with pytest.raises(MatchError, match="invalid regular expression"):
        match_one("pcre", "web(", WEB)


def test_list_string_and_list_forms() -> None:
    assert match_one("list", "db01,web01", WEB)
    assert match_one("list", "db01, web01", WEB)
    assert match_one("list", ["web01", "web02"], WEB)
    assert match_one("list", "web0,web011", WEB) is False
    assert match_one("list", "web*", WEB) is False  # no globbing in a list


@pytest.mark.parametrize(("expr", "expected"), [
    ("os:Debian", True),
    ("os:debian", True),  # values compare case-insensitively
    ("os:DEB*", True),  # ... globs too
    ("os:Red*", False),
    ("roles:web", True),  # a list grain matches any member
    ("roles:c?che", True),
    ("roles:db", False),
    ("deep:a:b:leaf", True),  # nested keys
    ("deep:a:b:LEAF", True),
    ("deep:a:b:other", False),
    ("deep:a", True),  # a key that exists under deep
    ("mounts:path:/srv", True),  # a list of dicts
    ("ports:443", True),  # non-string values
    ("url:http://x", True),  # the value may contain the delimiter
    ("missing:x", False),
    ("*:Debian", True),  # any top-level grain
    ("*:*:b:leaf", True),
    ("*:leaf", False),  # '*:' looks one level down only
    ("roles:*", True),  # the grain exists
    ("missing:*", False),
])
def test_grain(expr: str, expected: bool) -> None:
    assert match_one("grain", expr, WEB) is expected


def test_grain_custom_delimiter() -> None:
    assert match_one("grain", "deep|a|b|leaf", WEB, delimiter="|")
    assert match_one("grain", "url|http://x", WEB, delimiter="|")


def test_grain_without_a_value_is_an_error() -> None:
    with pytest.raises(MatchError, match=r"key:value"):
        match_one("grain", "os", WEB)


@pytest.mark.parametrize(("expr", "expected"), [
    ("os:Deb.*", True),
    ("os:deb", True),  # re.match: anchored at the start only, case-insensitive
    ("os:^red", False),
    ("roles:(db|cache)", True),
    ("deep:a:b:l.a.", True),
])
def test_grain_pcre(expr: str, expected: bool) -> None:
    assert match_one("grain_pcre", expr, WEB) is expected


@pytest.mark.parametrize(("tgt_type", "expr", "expected"), [
    ("pillar", "role:web", True),
    ("pillar", "role:w*", True),
    ("pillar", "tags:b", True),
    ("pillar", "app:tier:front", True),
    ("pillar", "role:db", False),
    ("pillar_pcre", "role:w.b", True),
    ("pillar_pcre", "version:1\\.1", True),
    ("pillar_pcre", "role:d", False),
    ("pillar_exact", "role:web", True),
    ("pillar_exact", "role:w*", False),  # no globbing
    ("pillar_exact", "version:1.1", False),  # no prefix matching
    ("pillar_exact", "app:tier:front", True),
])
def test_pillar_matchers(tgt_type: str, expr: str, expected: bool) -> None:
    assert match_one(tgt_type, expr, WEB) is expected


@pytest.mark.parametrize(("expr", "web", "db"), [
    ("10.0.0.5", True, False),  # a single address
    ("10.0.0.0/24", True, False),
    ("10.0.0.0/8", True, True),
    ("192.168.0.0/16", False, False),
    ("2001:db8::/32", True, False),  # ipv6 against the ipv6 grain
    ("2001:db8::5", True, False),
    ("::1", True, False),
])
def test_ipcidr(expr: str, web: bool, db: bool) -> None:
    assert match_one("ipcidr", expr, WEB) is web
    assert match_one("ipcidr", expr, DB) is db


def test_ipcidr_invalid_is_an_error() -> None:
    with pytest.raises(MatchError, match="invalid IP address or CIDR"):
        match_one("ipcidr", "10.0.0.300/8", WEB)


def test_unknown_match_type() -> None:
    with pytest.raises(MatchError, match="unknown match type 'bogus'"):
        match_one("bogus", "x", WEB)


# -- nodegroups -------------------------------------------------------------------------------

@pytest.mark.parametrize(("group", "web", "db"), [
    ("webs", True, False),  # a glob
    ("names", True, False),  # a bare string of names is a list
    ("name_list", False, True),  # a YAML list of names
    ("regexy", True, True),  # a name with regex characters is a pcre
    ("debian", True, False),  # a compound expression
    ("frontends", True, False),  # a list holding N@ and operators
    ("nested", True, False),  # nested N@ inside a string
    ("unknown", False, False),  # an unknown group matches nothing
])
def test_nodegroup(group: str, web: bool, db: bool) -> None:
    assert nodegroup_match(group, WEB, NODEGROUPS) is web
    assert nodegroup_match(group, DB, NODEGROUPS) is db


def test_nodegroup_expansion() -> None:
    assert expand_nodegroup("names", NODEGROUPS) == ["L@web01,db02"]
    assert expand_nodegroup("regexy", NODEGROUPS) == ["E@(web|db)0[0-9]"]
    assert expand_nodegroup("frontends", NODEGROUPS) == ["(", "(", "web*", ")", "or", "G@roles:lb", ")"]


def test_nodegroup_cycle_is_an_error() -> None:
    with pytest.raises(MatchError, match="includes itself"):
        nodegroup_match("loop_a", WEB, NODEGROUPS)


# -- compound ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "web", "db"), [
    ("G@os:Debian", True, False),
    ("P@os:(Deb|Ubu).*", True, False),
    ("I@role:web", True, False),
    ("J@role:^d", False, True),
    ("L@db01,web02", False, True),
    ("E@web\\d+", True, False),
    ("S@10.0.0.0/24", True, False),
    ("S@10.0.0.0/8", True, True),
    ("N@webs", True, False),
    ("N@nested", True, False),
    ("web*", True, False),  # a bare word is a glob
    ("G|@deep|a|b|leaf", True, False),  # custom delimiter
    ("I;@app;tier;front", True, False),
    ("P|@url|http://.*", True, False),
    ("J/@app/tier/fr.nt", True, False),
])
def test_compound_engines(expr: str, web: bool, db: bool) -> None:
    assert compound_match(expr, WEB, NODEGROUPS) is web
    assert compound_match(expr, DB, NODEGROUPS) is db


@pytest.mark.parametrize(("expr", "web", "db"), [
    ("not web01", False, True),  # leading not
    ("not not web01", True, False),
    ("* not web01", False, True),  # not after an operand = "and not"
    ("* not G@os:Debian not db01", False, False),
    ("G@os:Debian and not I@role:db", True, False),
    ("web01 or db01 and G@os:Debian", True, False),  # and binds tighter than or
    ("( web01 or db01 ) and G@os:RedHat", False, True),  # parentheses override it
    ("web01 or db01 and G@os:RedHat", True, True),
    ("( ( web* ) )", True, False),
    ("not ( web* or G@roles:db )", False, False),
    ("( web* and ( G@os:Debian or G@os:RedHat ) ) or ( db* and not ( I@role:web ) )", True, True),
    ("not web01 and not db01", False, False),
    ("db01 or not G@os:RedHat", True, True),
    ("N@webs or N@dbs", True, True),
    ("N@frontends and G@roles:web", True, False),
])
def test_compound_operators(expr: str, web: bool, db: bool) -> None:
    assert compound_match(expr, WEB, NODEGROUPS) is web
    assert compound_match(expr, DB, NODEGROUPS) is db


def test_compound_list_form() -> None:
    assert compound_match(["G@os:Debian", "and", "web*"], WEB)
    assert compound_match(["G@os:Debian", "and", "db*"], WEB) is False


def test_compound_evaluates_the_whole_expression() -> None:
    # the right-hand side is still checked, even when the left side decides the result
    with pytest.raises(MatchError):
        compound_match("web01 or G@novalue", WEB)


@pytest.mark.parametrize(("expr", "why"), [
    ("and x", "unexpected 'and'"),
    ("or x", "unexpected 'or'"),
    ("x y", "missing operator between 'x' and 'y'"),
    ("( x", "missing ')'"),
    ("x )", "unexpected ')'"),
    ("( )", "unexpected ')'"),
    ("x and", "expression ends where a target was expected"),
    ("not", "expression ends where a target was expected"),
    ("x ( y )", "missing operator before '('"),
    ("( and x )", "'and' right after '('"),
    ("x or or y", "unexpected 'or'"),
    ("Z@x", "unknown target engine 'Z@'"),
    ("", "empty expression"),
    ("   ", "empty expression"),
])
def test_malformed_compound(expr: str, why: str) -> None:
    with pytest.raises(MatchError) as info:
        compound_match(expr, WEB)
    err = info.value
    assert err.kind == MATCH_ERROR
    assert why in err.message
    assert f"invalid compound target {expr!r}" in err.message


def test_malformed_nodegroup_reference() -> None:
    with pytest.raises(MatchError, match="unknown nodegroup 'nope'"):
        compound_match("N@nope or web01", WEB, NODEGROUPS)


# -- through a top file -----------------------------------------------------------------------

TOP_GRAINS = {"os": "Debian", "roles": ["web"], "ipv4": ["10.0.0.5"], "ipv6": ["2001:db8::5"],
              "deep": {"a": "b"}}


def test_every_match_type_in_a_pillar_top_file(tmp_path) -> None:
    files = {
        "top.sls": """
            base:
              'web*':
                - glob_yes
                - ident
              'db*':
                - glob_no
              'web\\d+':
                - match: pcre
                - pcre_yes
              'db01,web01':
                - match: list
                - list_yes
              'roles:web':
                - match: grain
                - grain_yes
              'os:Deb.*':
                - match: grain_pcre
                - grain_pcre_yes
              'ident:web':
                - match: pillar
                - pillar_yes
              'ident:w.b':
                - match: pillar_pcre
                - pillar_pcre_yes
              'ident:we':
                - match: pillar_exact
                - pillar_exact_no
              '10.0.0.0/24':
                - match: ipcidr
                - ipcidr_yes
              '2001:db8::/32':
                - match: ipcidr
                - ipv6_yes
              'fronts':
                - match: nodegroup
                - nodegroup_yes
              'G@os:Debian and ( L@x,y or not E@db.* )':
                - compound_yes
              'G|@deep|a|b':
                - delimiter_yes
        """,
        "ident.sls": "ident: web\n",
        **{f"{name}.sls": f"{name}: true\n" for name in (
            "glob_yes", "glob_no", "pcre_yes", "list_yes", "grain_yes", "grain_pcre_yes", "pillar_yes",
            "pillar_pcre_yes", "pillar_exact_no", "ipcidr_yes", "ipv6_yes", "nodegroup_yes", "compound_yes",
            "delimiter_yes")},
    }
    result = compile_pillar(tmp_path, files, grains=TOP_GRAINS, nodegroups={"fronts": "web* or lb*"})
    assert not result.errors, [str(e) for e in result.errors]
    hits = sorted(k for k, v in result.pillar.items() if v is True)
    # pillar targets cannot see pillar compiled from sls (as in Salt: only ext_pillar_first data)
    assert result.pillar["ident"] == "web"
    assert hits == sorted(["glob_yes", "pcre_yes", "list_yes", "grain_yes", "grain_pcre_yes",
                           "ipcidr_yes", "ipv6_yes", "nodegroup_yes", "compound_yes", "delimiter_yes"])


def test_pillar_targets_in_a_pillar_top_see_the_ext_pillar_when_it_comes_first(tmp_path) -> None:
    files = {
        "top.sls": """
            base:
              'I@ident:web':
                - yes_compound
              'ident:web':
                - match: pillar
                - yes_pillar
        """,
        "yes_compound.sls": "yes_compound: true\n",
        "yes_pillar.sls": "yes_pillar: true\n",
    }

    def drivers(name):
        return (lambda minion_id, pillar, *a, **k: {"ident": "web"}) if name == "fake" else None

    first = compile_pillar(tmp_path, files, drivers=drivers, ext_pillar=[{"fake": {}}], ext_pillar_first=True)
    assert first.pillar == {"ident": "web", "yes_compound": True, "yes_pillar": True}
    after = compile_pillar(tmp_path, None, drivers=drivers, ext_pillar=[{"fake": {}}], ext_pillar_first=False)
    assert after.pillar == {"ident": "web"}


def test_malformed_target_in_a_top_file_names_file_and_line(tmp_path) -> None:
    files = {
        "top.sls": """
            base:
              '*':
                - common
              'web01 db01':
                - broken
        """,
        "common.sls": "common: 1\n",
        "broken.sls": "broken: 1\n",
    }
    result = compile_pillar(tmp_path, files)
    assert result.pillar["common"] == 1
    assert "broken" not in result.pillar
    (err,) = result.errors
    assert err.kind == MATCH_ERROR
    assert err.file == str(tmp_path / "pillar" / "top.sls")
    assert err.line == 4
    assert "missing operator between 'web01' and 'db01'" in err.message
    assert len(result.pillar["_errors"]) == 1


def test_assumed_data_answers_data_targets_without_looking() -> None:
    # how the master decides whether a minion it has no data for can match on its id alone
    yes, no = Minion("web01", assume_data=True), Minion("web01", assume_data=False)
    for expr, if_yes, if_no in [("G@os:Debian and web*", True, False), ("G@os:Debian and db*", False, False),
                                ("web* or I@role:x", True, True), ("not P@os:Deb.* and web01", False, True),
                                ("S@10.0.0.0/8 or N@group", True, False)]:
        groups = {"group": "I@a:b"}
        assert match_one("compound", expr, yes, groups) is if_yes, expr
        assert match_one("compound", expr, no, groups) is if_no, expr
    assert match_one("grain", "os:Anything", yes) is True
    assert match_one("glob", "db*", yes) is False          # only data targets are assumed
    # the mode is the minion's, not the module's: a minion with data is matched against it meanwhile
    assert match_one("grain", "os:Debian", WEB) is True and match_one("grain", "os:RedHat", WEB) is False


def test_the_matcher_keeps_no_state_between_calls() -> None:
    import threading

    from compiler import match

    assert not [name for name, value in vars(match).items() if isinstance(value, threading.local)]
