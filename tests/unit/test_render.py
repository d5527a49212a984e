"""Renderers, Salt's Jinja additions, the salt function table and filters, through the pillar compiler.

Expected values were checked against salt-call --local pillar.raw (Salt 3008.3) on the same trees.
"""

from __future__ import annotations

import pytest

from compiler import yamlload
from compiler.errors import RENDER_ERROR, CompileError
from compiler.render import parse_pipe, pipe_of
from tests.unit.helpers import compile_pillar, pillar_of

GRAINS = {"os": "Debian", "roles": ["web", "cache"], "deep": {"a": {"b": "leaf"}}}


def _one(tmp_path, text: str, name: str = "one", extra: dict | None = None, **opts) -> dict:
    """Compile a tree whose top file lists one sls holding text."""
    files = {"top.sls": f"base:\n  '*':\n    - {name}\n", f"{name.replace('.', '/')}.sls": text, **(extra or {})}
    return pillar_of(tmp_path, files, grains=GRAINS, **opts)


# -- pipelines ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "default", "pipe", "shebang"), [
    ("a: 1\n", "jinja|yaml", ["jinja", "yaml"], False),
    ("#!yaml\na: 1\n", "jinja|yaml", ["yaml"], True),
    ("#!json\n{}", "jinja|yaml", ["json"], True),
    ("#!jinja|json\n{}", "jinja|yaml", ["jinja", "json"], True),
    ("#! jinja | yaml\n", "yaml", ["jinja", "yaml"], True),
    ("#!py\n", "jinja|yaml", ["py"], True),
    ("a: 1\n", "yaml_jinja", ["jinja", "yaml"], False),  # Salt's legacy names
    ("a: 1\n", "json", ["json"], False),
])
def test_pipe_of(text: str, default: str, pipe: list[str], shebang: bool) -> None:
    assert pipe_of(text, default) == (pipe, shebang)


def test_parse_pipe() -> None:
    assert parse_pipe(" jinja | yaml ") == ["jinja", "yaml"]


def test_default_renderer_is_jinja_then_yaml(tmp_path) -> None:
    text = "{% set n = 3 %}\nnums: {{ range(n) | list }}\nos: {{ grains['os'] }}\n"
    assert _one(tmp_path, text) == {"nums": [0, 1, 2], "os": "Debian"}


def test_the_renderer_option_sets_the_default(tmp_path) -> None:
    # with `renderer: yaml` Jinja is not run: the braces stay in the (quoted) string
    assert _one(tmp_path, "a: '{{ grains.os }}'\n", renderer="yaml") == {"a": "{{ grains.os }}"}
    # the default renderer applies to the top file too, hence its #!yaml here
    top = "#!yaml\nbase:\n  '*':\n    - one\n"
    assert _one(tmp_path, '{"a": "{{ grains.os }}"}', renderer="jinja|json", extra={"top.sls": top}) == {
        "a": "Debian"}


def test_yaml_shebang_skips_jinja(tmp_path) -> None:
    assert _one(tmp_path, "#!yaml\na: '{{ grains.os }}'\nb: [1, 2]\n") == {"a": "{{ grains.os }}", "b": [1, 2]}


def test_json_shebang(tmp_path) -> None:
    assert _one(tmp_path, '#!json\n{"a": {"b": [1, true, null]}}\n') == {"a": {"b": [1, True, None]}}


def test_jinja_yaml_shebang(tmp_path) -> None:
    text = "#!jinja|yaml\n{% for r in grains.roles %}\n{{ r }}: true\n{% endfor %}\n"
    assert _one(tmp_path, text) == {"web": True, "cache": True}


def test_jinja_json_shebang(tmp_path) -> None:
    text = '#!jinja|json\n{"os": "{{ grains.os }}", "roles": {{ grains.roles | json }}}\n'
    assert _one(tmp_path, text) == {"os": "Debian", "roles": ["web", "cache"]}


def test_shebang_line_does_not_shift_line_numbers(tmp_path) -> None:
    result = compile_pillar(tmp_path, {"top.sls": "base:\n  '*':\n    - bad\n",
                                       "bad.sls": "#!jinja|yaml\nok: 1\nbad: [\n"})
    (err,) = result.errors
    assert err.kind == RENDER_ERROR
    assert err.line == 4


def test_unknown_renderer_is_a_clear_error(tmp_path) -> None:
    result = compile_pillar(tmp_path, {"top.sls": "base:\n  '*':\n    - x\n", "x.sls": "#!mako|yaml\na: 1\n"})
    (err,) = result.errors
    assert "renderer 'mako' is not available" in err.message
    assert (err.file, err.line) == (str(tmp_path / "pillar" / "x.sls"), 1)


def test_renderer_blacklist(tmp_path) -> None:
    result = compile_pillar(tmp_path, {"top.sls": "base:\n  '*':\n    - x\n", "x.sls": "#!py\ndef run(): return {}\n"},
                            renderer_blacklist=["py"])
    (err,) = result.errors
    assert "disabled by renderer_blacklist" in err.message


# -- #!py ---------------------------------------------------------------------------------------

PY_SLS = '''#!py
def run():
    return {"py": {
        "grain": __grains__["os"],
        "plain_grains": grains["roles"],
        "pillar_keys": sorted(__pillar__),
        "plain_pillar": pillar.get("ext", {}).get("k"),
        "opts_id": __opts__["id"],
        "plain_opts": opts["id"],
        "salt": __salt__["grains.get"]("deep:a:b"),
        "plain_salt": salt["pillar.get"]("ext:k", "nope"),
        "sls": __sls__,
        "plain_sls": sls,
        "env": __env__,
        "saltenv": saltenv,
        "squares": [i * i for i in range(4)],
    }}
'''


def test_py_renderer_sees_what_salt_gives_it(tmp_path) -> None:
    def drivers(name):
        return (lambda minion_id, pillar, *a, **k: {"ext": {"k": "v"}}) if name == "fake" else None

    pillar = _one(tmp_path, PY_SLS, name="sub.p", drivers=drivers, ext_pillar=[{"fake": {}}],
                  ext_pillar_first=True)
    assert pillar["py"] == {
        "grain": "Debian", "plain_grains": ["web", "cache"],
        "pillar_keys": ["ext"], "plain_pillar": "v",
        "opts_id": "web01", "plain_opts": "web01",
        "salt": "leaf", "plain_salt": "v",
        "sls": "sub.p", "plain_sls": "sub.p",
        "env": "base", "saltenv": "base",
        "squares": [0, 1, 4, 9],
    }


def test_py_renderer_errors(tmp_path) -> None:
    files = {
        "top.sls": "base:\n  '*':\n    - norun\n    - raises\n    - syntax\n    - notdict\n",
        "norun.sls": "#!py\nx = 1\n",
        "raises.sls": "#!py\n\ndef run():\n    data = {}\n    return data['missing']\n",
        "syntax.sls": "#!py\ndef run(:\n",
        "notdict.sls": "#!py\ndef run():\n    return [1]\n",
    }
    result = compile_pillar(tmp_path, files)
    errs = {e.file.rsplit("/", 1)[-1]: e for e in result.errors}
    assert "defines no run() function" in errs["norun.sls"].message
    assert "KeyError" in errs["raises.sls"].message and errs["raises.sls"].line == 5
    assert "Python syntax error" in errs["syntax.sls"].message and errs["syntax.sls"].line == 2
    assert errs["notdict.sls"].kind == "not_a_dict"


# -- Salt's Jinja tags and template loading ------------------------------------------------

JINJA_TREE = {
    "top.sls": "base:\n  '*':\n    - app\n    - app.web\n",
    "app/init.sls": """
        {% import_yaml 'app/defaults.yaml' as defaults %}
        {% import_json 'app/data.json' as data %}
        {% import_text 'app/motd.txt' as motd %}
        {% load_yaml as loaded %}
        a: 1
        b: [x, y]
        {% endload %}
        {% load_json as lj %}
        {"k": [1, 2]}
        {% endload %}
        {% load_text as lt %}
        some text
        {% endload %}
        {% from 'app/macros.jinja' import greet with context %}
        {% from './lib/rel.jinja' import rel %}
        {% import 'app/macros.jinja' as mac %}
        app:
          defaults: {{ defaults | json }}
          data: {{ data | json }}
          motd: {{ motd | json }}
          loaded: {{ loaded | json }}
          lj: {{ lj | json }}
          lt: {{ lt | json }}
          greet: {{ greet('bob') }}
          rel: {{ rel() }}
          mac: {{ mac.shout('x') }}
        {% include 'app/inc.jinja' %}
    """,
    "app/defaults.yaml": "port: 8080\nname: app\n",
    "app/data.json": '{"list": [1, 2], "o": {"x": true}}',
    "app/motd.txt": "Welcome\nline2\n",
    "app/macros.jinja": "{% macro greet(n) %}hello-{{ n }}-{{ grains['os'] }}{% endmacro %}\n"
                        "{% macro shout(n) %}{{ n|upper }}{% endmacro %}\n",
    "app/lib/rel.jinja": "{% from 'app/lib/sib.jinja' import s %}{% macro rel() %}rel-{{ s() }}{% endmacro %}\n",
    "app/lib/sib.jinja": "{% macro s() %}sib{% endmacro %}\n",
    "app/inc.jinja": "included_key: {{ grains['os'] }}-{{ sls }}\n",
    "app/web.sls": """
        {% import_yaml './defaults.yaml' as d %}
        {% from '../app/macros.jinja' import shout %}
        web:
          port: {{ d.port }}
          s: {{ shout('w') }}
    """,
}


def test_salt_jinja_tags_imports_and_includes(tmp_path) -> None:
    pillar = pillar_of(tmp_path, JINJA_TREE, grains=GRAINS)
    assert pillar == {
        "app": {
            "defaults": {"port": 8080, "name": "app"},
            "data": {"list": [1, 2], "o": {"x": True}},
            "motd": "Welcome\nline2",
            "loaded": {"a": 1, "b": ["x", "y"]},
            "lj": {"k": [1, 2]},
            "lt": "\nsome text\n",
            "greet": "hello-bob-Debian",
            "rel": "rel-sib",
            "mac": "X",
        },
        "included_key": "Debian-app",
        "web": {"port": 8080, "s": "W"},
    }


def test_relative_import_inside_an_imported_template(tmp_path) -> None:
    # saltpan resolves ./x against the importing template at any depth (Salt only from the sls itself)
    extra = {"lib/a.jinja": "{% from './b.jinja' import b %}{% macro a() %}a{{ b() }}{% endmacro %}",
             "lib/b.jinja": "{% macro b() %}b{% endmacro %}"}
    assert _one(tmp_path, "{% from 'lib/a.jinja' import a %}v: {{ a() }}\n", extra=extra) == {"v": "ab"}


def test_salt_url_in_an_import(tmp_path) -> None:
    extra = {"d.yaml": "k: v\n"}
    assert _one(tmp_path, "{% import_yaml 'salt://d.yaml' as d %}v: {{ d.k }}\n", extra=extra) == {"v": "v"}


def test_missing_import_is_a_render_error_at_its_line(tmp_path) -> None:
    result = compile_pillar(tmp_path, {"top.sls": "base:\n  '*':\n    - x\n",
                                       "x.sls": "a: 1\n{% import_yaml 'nope.yaml' as n %}\n"})
    (err,) = result.errors
    assert err.kind == RENDER_ERROR
    assert "cannot import 'nope.yaml'" in err.message
    assert (err.file, err.line) == (str(tmp_path / "pillar" / "x.sls"), 2)


# -- template context and the salt function table ----------------------------------------------

def test_template_variables(tmp_path) -> None:
    text = """
        v:
          sls: {{ sls }}
          slspath: '{{ slspath }}'
          sls_path: '{{ sls_path }}'
          slsdotpath: '{{ slsdotpath }}'
          slscolonpath: '{{ slscolonpath }}'
          tplfile: '{{ tplfile }}'
          tpldir: '{{ tpldir }}'
          tpldot: '{{ tpldot }}'
          saltenv: {{ saltenv }}
          opts_id: {{ opts['id'] }}
          grains_os: {{ grains.os }}
          has_pillar: {{ pillar is mapping }}
    """
    files = {"top.sls": "base:\n  '*':\n    - a.b\n", "a/b/init.sls": text}
    assert pillar_of(tmp_path, files, grains=GRAINS)["v"] == {
        "sls": "a.b", "slspath": "a/b", "sls_path": "a_b", "slsdotpath": "a.b", "slscolonpath": "a:b",
        "tplfile": "a/b/init.sls", "tpldir": "a/b", "tpldot": "a.b", "saltenv": "base",
        "opts_id": "web01", "grains_os": "Debian", "has_pillar": True,
    }


def test_salt_function_table(tmp_path) -> None:
    text = """
        gg: '{{ salt['grains.get']('deep:a:b', 'dflt') }}'
        gd: '{{ salt['grains.get']('deep:nope', 'dflt') }}'
        gdd: '{{ salt['grains.get']('deep:nope') }}'
        gdelim: '{{ salt['grains.get']('deep|a|b', delimiter='|') }}'
        glist: {{ salt['grains.get']('roles') | json }}
        pg: '{{ salt['pillar.get']('x:y', 'pdflt') }}'
        cg: '{{ salt['config.get']('id') }}'
        cg2: '{{ salt['config.get']('os') }}'
        cg3: '{{ salt['config.get']('nope', 'cdflt') }}'
        matched: {{ salt['match.glob']('web*') }}
    """
    assert _one(tmp_path, text) == {
        "gg": "leaf", "gd": "dflt", "gdd": "", "gdelim": "leaf", "glist": ["web", "cache"],
        "pg": "pdflt", "cg": "web01", "cg2": "Debian", "cg3": "cdflt", "matched": True,
    }


def test_pillar_get_sees_ext_pillar_when_it_comes_first(tmp_path) -> None:
    def drivers(name):
        return (lambda minion_id, pillar, *a, **k: {"x": {"y": "ext"}}) if name == "fake" else None

    text = "seen: '{{ salt['pillar.get']('x:y', 'none') }}'\nplain: '{{ pillar.get('x', {}).get('y', 'none') }}'\n"
    first = _one(tmp_path, text, drivers=drivers, ext_pillar=[{"fake": {}}], ext_pillar_first=True)
    assert (first["seen"], first["plain"]) == ("ext", "ext")
    last = _one(tmp_path, text, drivers=drivers, ext_pillar=[{"fake": {}}])
    assert (last["seen"], last["plain"]) == ("none", "none")


def test_a_function_salt_has_not_is_undefined_and_calling_it_names_file_and_line(tmp_path) -> None:
    result = compile_pillar(tmp_path, {"top.sls": "base:\n  '*':\n    - x\n",
                                       "x.sls": "a: {{ salt['nosuch.fn'] is defined }}\n"
                                                "b: {{ salt['nosuch.fn'] | default('d') }}\n"
                                                "c: {{ salt['nosuch.fn']() }}\n"})
    (err,) = result.errors
    assert "salt['nosuch.fn'] is undefined: saltpan has no execution module 'nosuch'" in err.message
    assert (err.file, err.line) == (str(tmp_path / "pillar" / "x.sls"), 3)


# -- filters ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "expected"), [
    ("{'a': [1, 'x y'], 'b': None} | yaml", {"a": [1, "x y"], "b": None}),
    ("{'b': 1, 'a': [1, 'é']} | json", {"b": 1, "a": [1, "é"]}),
    ("{'b': 1, 'a': '<x>'} | tojson", {"b": 1, "a": "<x>"}),
    ("'a: b' | yaml_encode", "a: b"),
    ("5 | yaml_encode", 5),
    ("none | yaml_encode", None),
    ("true | yaml_encode", True),
    ("'a \"q\" \\\\ b: c' | yaml_dquote", "a \"q\" \\ b: c"),
    ("\"it's: x\" | yaml_squote", "it's: x"),
    ("['yes'|to_bool, 'on'|to_bool, 'off'|to_bool, '1'|to_bool, 'y'|to_bool, 2|to_bool, none|to_bool,"
     " [1]|to_bool, []|to_bool, 'TRUE'|to_bool, 'x'|to_bool] | json",
     [True, False, False, True, False, True, False, True, False, True, False]),
    ("['a'|sequence, ['a']|sequence, {'k': 1}|sequence, none|sequence] | json",
     [["a"], ["a"], {"k": 1}, [None]]),
    ("[3, 1, 3, 'a', 'a', 1] | unique | json", [3, 1, "a"]),
    ("'abc123def' | regex_search('([0-9]+)([a-z]+)') | json", ["123", "def"]),
    ("'abc123' | regex_match('[a-z]+([0-9]+)') | json", ["123"]),
    ("'abc123' | regex_match('[0-9]+') | json", None),
    ("'abc123def' | regex_search('[0-9]+') | json", ["123"]),  # no groups: the whole match
    ("'abc123' | regex_match('[a-z]+') | json", ["abc"]),
    ("'a1b22c' | regex_replace('[0-9]+', '#')", "a#b#c"),
    ("[1, [2, [3, None]], 4] | flatten | json", [1, 2, 3, 4]),
    ("[1, [2, [3, None]], 4] | flatten(preserve_nulls=True) | json", [1, 2, 3, None, 4]),
    ("[1, [2, [3, [5]]], 4] | flatten(levels=1) | json", [1, 2, [3, [5]], 4]),
    ("[1, 2, 3] | compare_lists([2, 3, 4]) | json", {"new": [4], "old": [1]}),
    ("{'a': 1, 'b': 2} | compare_dicts({'a': 1, 'b': 3, 'c': 4}) | json",
     {"b": {"new": 3, "old": 2}, "c": {"new": 4, "old": ""}}),
    ("['10.0.0.1'|is_ip, 'x'|is_ip, '::1'|is_ipv6, '::1'|is_ipv4, '10.1.1.1'|is_ipv4] | json",
     [True, False, True, False, True]),
    ("['10.0.0.1', 'x', '::1', '192.168.0.0/24'] | ipaddr | json", ["10.0.0.1", "192.168.0.0/24", "::1"]),
    ("['10.0.0.1', '::1'] | ipv4 | json", ["10.0.0.1"]),
    ("'10.0.0.0/30' | network_hosts | json", ["10.0.0.1", "10.0.0.2"]),
    ("'10.0.0.0/24' | network_size", 256),
    ("['1K'|human_to_bytes, '2 MB'|human_to_bytes, '3g'|human_to_bytes, '10'|human_to_bytes] | json",
     [1024, 2097152, 3221225472, 10]),
    ("'camelCaseString' | to_snake_case", "camel_case_string"),
    ("'snake_case_string' | to_camelcase", "snakeCaseString"),
    ("'snake_case_string' | to_camelcase(uppercamel=True)", "SnakeCaseString"),
    ("{'a': {'b': [{'c': 5}]}} | traverse('a:b:0:c')", 5),
    ("{'a': 1} | traverse('x:y', 'dflt')", "dflt"),
    ("[1, 2, 3, 4] | avg", 2.5),
    ("[1, 2] | union([2, 3]) | json", [1, 2, 3]),
    ("[1, 2, 3] | intersect([2, 3, 4]) | json", [2, 3]),
    ("[1, 2, 3] | difference([2]) | json", [1, 3]),
    ("[1, 2, 3] | symmetric_difference([2, 4]) | json", [1, 3, 4]),
    ("'abc' | md5", "900150983cd24fb0d6963f7d28e17f72"),
    ("'abc' | sha256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ("'abc' | base64_encode", "YWJj"),
    ("'YWJj' | base64_decode", "abc"),
    ("'a b' | quote | json", "'a b'"),
    ("'a.b*c' | regex_escape", "a\\.b\\*c"),
    ("['5'|to_num, '5.5'|to_num, 'x'|to_num] | json", [5, 5.5, "x"]),
    ("1700000000 | strftime('%Y-%m-%d')", "2023-11-14"),
    ("'abc' | uuid", "3c2ec1f9-32eb-522f-9269-82ee3f929675"),
    ("[true, false] | exactly_one_true", True),
    ("[true, true, false] | exactly_n_true(2)", True),
    ("'a,b' | method_call('split', ',') | json", ["a", "b"]),
    ("'abc' is match('a.c')", True),
    ("[{'n': 'x', 'on': true}, {'n': 'y', 'on': false}] | selectattr('on') | map(attribute='n') | list",
     ["x"]),
    ("missing_var | default('dflt')", "dflt"),
    ("none | default('x')", "None"),
])
def test_filter(tmp_path, expr: str, expected) -> None:
    assert _one(tmp_path, f"v: {{{{ {expr} }}}}\n") == {"v": expected}


# -- YAML as Salt loads it ----------------------------------------------------------------------

def test_yaml_like_salt(tmp_path) -> None:
    text = """
        octal: 0755
        quoted: '0755'
        eight: 08
        signed: -012
        hex: 0x1F
        under: 1_000
        sexagesimal: 12:30
        date: 2024-01-02
        datetime: 2024-01-02T10:00:00Z
        yes_: yes
        on_: on
        y_: y
        null_: ~
        float: 1.50
        sci: 1e3
        base: &b {x: 1, y: 2}
        merged:
          <<: *b
          y: 3
    """
    assert _one(tmp_path, text) == {
        "octal": 755, "quoted": "0755", "eight": "08", "signed": -10, "hex": 31, "under": 1000,
        "sexagesimal": 750, "date": "2024-01-02", "datetime": "2024-01-02T10:00:00Z", "yes_": True,
        "on_": True, "y_": "y", "null_": None, "float": 1.5, "sci": "1e3",
        "base": {"x": 1, "y": 2}, "merged": {"x": 1, "y": 3},
    }


def test_yaml_duplicate_key_is_an_error() -> None:
    with pytest.raises(CompileError) as info:
        yamlload.load("a: 1\nb: 2\na: 3\n", "f.sls")
    assert info.value.kind == RENDER_ERROR
    assert "conflicting ID 'a'" in info.value.message
    assert (info.value.file, info.value.line) == ("f.sls", 3)


def test_yaml_key_lines() -> None:
    data, lines = yamlload.load("a:\n  b: 1\n  c:\n    - d: 2\ne: 3\n", want_lines=True)
    assert data == {"a": {"b": 1, "c": [{"d": 2}]}, "e": 3}
    assert lines == {("a",): 1, ("a", "b"): 2, ("a", "c"): 3, ("a", "c", "d"): 4, ("e",): 5}


def test_yaml_refuses_python_tags() -> None:
    with pytest.raises(CompileError, match="YAML tag '!!python/object/apply:os.system' is not allowed"):
        yamlload.load("a: !!python/object/apply:os.system ['true']\n")


def test_yaml_uses_the_c_loader_when_available() -> None:
    import yaml

    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(yamlload.SaltYamlLoader, yaml.CSafeLoader)


def test_imported_templates_see_the_render_context_at_every_depth(tmp_path) -> None:
    # Salt renders with the context in the environment's globals: an import without
    # `with context` still sees grains/salt, also from a template that file imports itself.
    files = {
        "top.sls": "base:\n  '*':\n    - main\n",
        "inner.jinja": "{% set role = salt['grains.get']('roles')[0] %}",
        "map.jinja": "{% from 'inner.jinja' import role %}{% set m = {'os': grains.os, 'role': role} %}",
        "main.sls": "{% from 'map.jinja' import m %}\nm: {{ m | json }}\n",
    }
    from compiler.pillar import PillarCompiler
    from compiler.roots import LocalRoots
    from tests.unit.helpers import write_tree

    write_tree(tmp_path / "pillar", files)
    roots = {"base": [str(tmp_path / "pillar")]}
    from runtime.pipeline import offline_functions

    opts = {"pillar_roots": roots}
    compiler = PillarCompiler(opts, LocalRoots(roots), functions=offline_functions(opts))
    first = compiler.compile("web01", {"id": "web01", "os": "Debian", "roles": ["web"]})
    second = compiler.compile("db01", {"id": "db01", "os": "RedHat", "roles": ["db"]})
    assert first.errors == [] and second.errors == []
    # the imported module is built per render, never reused for another minion
    assert first.pillar["m"] == {"os": "Debian", "role": "web"}
    assert second.pillar["m"] == {"os": "RedHat", "role": "db"}
