"""Every pillar error kind: structured (kind, real file, line) and Salt's string in `_errors`.

The `_errors` strings are the ones salt-call --local pillar.raw (Salt 3008.3) gives for the same trees.
Errors never stop the compile: everything else still compiles.
"""

from __future__ import annotations

import pytest

from compiler.errors import INCLUDE_CYCLE, MISSING_SLS, NOT_A_DICT, RENDER_ERROR, CompileError
from tests.unit.helpers import compile_pillar


def _compile_with(tmp_path, broken: dict[str, str], top_names: list[str], **opts):
    files = {
        "top.sls": "base:\n  '*':\n    - good\n" + "".join(f"    - {n}\n" for n in top_names),
        "good.sls": "good: true\n",
        **broken,
    }
    result = compile_pillar(tmp_path, files, **opts)
    assert result.pillar["good"] is True, "one broken sls must not stop the others"
    return result


def _path(tmp_path, rel: str) -> str:
    return str(tmp_path / "pillar" / rel)


@pytest.mark.parametrize(("name", "text", "kind", "line", "words", "salt_text"), [
    ("yamlerr", "a: 1\nb: {c: 1\nd: 2\n", RENDER_ERROR, 3, "YAML syntax error",
     "Rendering SLS 'yamlerr' failed. Please see master log for details."),
    ("yamldup", "a: 1\nb: 2\na: 3\n", RENDER_ERROR, 3, "conflicting ID 'a'",
     "Rendering SLS 'yamldup' failed. Please see master log for details."),
    ("undef", "a: 1\nb: {{ no_such_var }}\n", RENDER_ERROR, 2, "'no_such_var' is undefined",
     "Rendering SLS 'undef' failed. Please see master log for details."),
    ("undefgrain", "a: 1\n\nb: {{ grains.no_such_grain }}\n", RENDER_ERROR, 3, "no attribute 'no_such_grain'",
     "Rendering SLS 'undefgrain' failed. Please see master log for details."),
    ("jinjasyntax", "a: 1\n{% if %}\nb: 2\n{% endif %}\n", RENDER_ERROR, 2, "Jinja syntax error",
     "Rendering SLS 'jinjasyntax' failed. Please see master log for details."),
    ("unclosed", "a: 1\n{% for x in [1] %}\nb: 2\n", RENDER_ERROR, 2, "needs to be closed is 'for'",
     "Rendering SLS 'unclosed' failed. Please see master log for details."),
    ("jsonerr", '#!json\n{"a": 1,\n "b": }\n', RENDER_ERROR, 3, "JSON syntax error",
     "Rendering SLS 'jsonerr' failed. Please see master log for details."),
    ("pyexc", "#!py\ndef run():\n    raise ValueError('boom')\n", RENDER_ERROR, 3, "ValueError: boom",
     "Rendering SLS 'pyexc' failed. Please see master log for details."),
    ("alist", "- a\n- b\n", NOT_A_DICT, 1, "renders to a list",
     "SLS 'alist' does not render to a dictionary"),
    ("scalar", "just a string\n", NOT_A_DICT, 1, "renders to a str",
     "SLS 'scalar' does not render to a dictionary"),
    ("pylist", "#!py\ndef run():\n    return [1]\n", NOT_A_DICT, 1, "renders to a list",
     "SLS 'pylist' does not render to a dictionary"),
])
def test_render_errors(tmp_path, name: str, text: str, kind: str, line: int, words: str, salt_text: str) -> None:
    result = _compile_with(tmp_path, {f"{name}.sls": text}, [name])
    (err,) = result.errors
    assert err.kind == kind
    assert err.file == _path(tmp_path, f"{name}.sls")
    assert err.line == line
    assert words in err.message
    assert f"{err.file}:{line}" in str(err)
    assert result.pillar["_errors"] == [salt_text]
    assert set(result.pillar) == {"good", "_errors"}


def test_an_empty_sls_is_not_an_error(tmp_path) -> None:
    result = _compile_with(tmp_path, {"empty.sls": "", "comment.sls": "# nothing\n",
                                      "blank.sls": "{% set x = 1 %}\n"}, ["empty", "comment", "blank"])
    assert result.errors == []
    assert result.pillar == {"good": True}


def test_unsafe_render_errors_show_the_details(tmp_path) -> None:
    result = _compile_with(tmp_path, {"undef.sls": "b: {{ nope }}\n"}, ["undef"], pillar_safe_render_error=False)
    (text,) = result.pillar["_errors"]
    assert text.startswith("Rendering SLS 'undef' failed: Jinja variable 'nope' is undefined")
    assert f"{_path(tmp_path, 'undef.sls')}:1" in text


def test_missing_sls_in_the_top_file(tmp_path) -> None:
    result = _compile_with(tmp_path, {}, ["does_not_exist"])
    (err,) = result.errors
    assert err.kind == MISSING_SLS
    assert (err.file, err.line) == (_path(tmp_path, "top.sls"), 2)
    assert result.pillar["_errors"] == [
        "Specified SLS 'does_not_exist' in environment 'base' is not available on the salt master"]


def test_missing_sls_under_ignore_missing_is_silent(tmp_path) -> None:
    files = {"top.sls": "base:\n  '*':\n    - good\n  'web*':\n    - ignore_missing: True\n    - nope\n",
             "good.sls": "good: true\n"}
    result = compile_pillar(tmp_path, files)
    assert result.errors == []
    assert result.pillar == {"good": True}


def test_missing_include(tmp_path) -> None:
    result = _compile_with(tmp_path, {"inc.sls": "x: 1\n\ninclude:\n  - gone\n"}, ["inc"])
    (err,) = result.errors
    assert err.kind == MISSING_SLS
    assert (err.file, err.line) == (_path(tmp_path, "inc.sls"), 3)
    assert result.pillar["x"] == 1
    assert result.pillar["_errors"] == [
        "Specified SLS 'gone' in environment 'base' is not available on the salt master"]


def test_sls_in_an_environment_without_roots(tmp_path) -> None:
    files = {"top.sls": "base:\n  '*':\n    - good\ndev:\n  '*':\n    - a\n    - b\n", "good.sls": "good: true\n"}
    result = compile_pillar(tmp_path, files)
    assert result.pillar["_errors"] == ["No matching pillar environment for environment 'dev' found"] * 2
    assert [(e.file, e.line) for e in result.errors] == [(_path(tmp_path, "top.sls"), 5)] * 2


def test_include_cycle(tmp_path) -> None:
    # Salt silently tolerates the cycle; saltpan reports it (and still merges what it can)
    broken = {"cyc_a.sls": "include:\n  - cyc_b\na: 1\n", "cyc_b.sls": "b: 1\ninclude:\n  - cyc_a\n"}
    result = _compile_with(tmp_path, broken, ["cyc_a"])
    (err,) = result.errors
    assert err.kind == INCLUDE_CYCLE
    assert (err.file, err.line) == (_path(tmp_path, "cyc_b.sls"), 2)
    assert "cyc_a -> cyc_b -> cyc_a" in err.message
    assert result.pillar["a"] == 1 and result.pillar["b"] == 1
    assert result.pillar["_errors"] == [err.salt_message()]


def test_self_include(tmp_path) -> None:
    # Salt 3008.3 silently reuses the sls being rendered; saltpan reports the cycle at the include line
    result = _compile_with(tmp_path, {"me.sls": "me: 1\ninclude:\n  - me\n"}, ["me"])
    (err,) = result.errors
    assert err.kind == INCLUDE_CYCLE
    assert err.message == "Include cycle in pillar: me -> me"
    assert (err.file, err.line) == (_path(tmp_path, "me.sls"), 2)
    assert result.pillar["me"] == 1
    assert result.pillar["_errors"] == [err.salt_message()]


def test_error_in_an_included_file_names_that_file(tmp_path) -> None:
    broken = {"outer.sls": "include:\n  - inner\nouter: 1\n", "inner.sls": "x: 1\ny: {{ nope }}\n"}
    result = _compile_with(tmp_path, broken, ["outer"])
    (err,) = result.errors
    assert (err.kind, err.file, err.line) == (RENDER_ERROR, _path(tmp_path, "inner.sls"), 2)
    assert result.pillar["outer"] == 1
    assert result.pillar["_errors"] == ["Rendering SLS 'inner' failed. Please see master log for details."]


def test_error_in_an_imported_macro_names_the_macro_file(tmp_path) -> None:
    broken = {"m.jinja": "{% macro m() %}\n{{ undefined_in_macro }}\n{% endmacro %}\n",
              "user.sls": "{% from 'm.jinja' import m %}\na: {{ m() }}\n"}
    result = _compile_with(tmp_path, broken, ["user"])
    (err,) = result.errors
    assert (err.kind, err.file, err.line) == (RENDER_ERROR, _path(tmp_path, "m.jinja"), 2)
    assert "Rendering SLS 'user' failed" in err.message


def test_errors_in_the_top_file(tmp_path) -> None:
    files = {"top.sls": "base:\n  '*':\n    - good\n  bad: [\n", "good.sls": "good: true\n"}
    result = compile_pillar(tmp_path, files)
    (err,) = result.errors
    assert (err.kind, err.file) == (RENDER_ERROR, _path(tmp_path, "top.sls"))
    assert err.line == 5
    assert result.pillar["_errors"][0].startswith("Rendering Primary Top file failed, render error:")
    assert "good" not in result.pillar


def test_malformed_top_entries(tmp_path) -> None:
    files = {"top.sls": "base:\n  '*':\n    - good\n  'web*': notalist\n", "good.sls": "good: true\n"}
    result = compile_pillar(tmp_path, files)
    assert result.pillar["good"] is True
    (err,) = result.errors
    assert "not formed as a list" in err.message
    assert (err.file, err.line) == (_path(tmp_path, "top.sls"), 4)


def test_compile_error_formatting() -> None:
    err = CompileError(RENDER_ERROR, "boom", "/srv/pillar/x.sls", 7)
    assert str(err) == "/srv/pillar/x.sls:7: boom"
    assert err.salt_message() == "boom (/srv/pillar/x.sls:7)"
    assert err.to_dict() == {"kind": RENDER_ERROR, "message": "boom", "file": "/srv/pillar/x.sls", "line": 7}
    assert str(CompileError(RENDER_ERROR, "boom")) == "boom"
