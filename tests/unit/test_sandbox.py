"""Templates cannot reach files outside the roots, nor Python internals (SECURITY.md items 4 and 11)."""

from __future__ import annotations

import json
import os

import pytest

from compiler.errors import ACCESS_DENIED, CompileError
from compiler.roots import LocalRoots, clean_relpath, find_sls, join_relative
from tests.unit.helpers import compile_pillar, write_tree

SECRET = "TOPSECRET-do-not-leak"


@pytest.fixture
def tree(tmp_path):
    """A pillar root beside an `outside` directory holding secrets."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text(f"secret: {SECRET}\n")
    (outside / "x.jinja").write_text(f"{{% macro y() %}}{SECRET}{{% endmacro %}}\n")
    (outside / "secret.sls").write_text(f"secret: {SECRET}\n")
    return tmp_path


def _compile_one(tree, text: str, extra: dict | None = None, links: dict | None = None):
    root = tree / "pillar"
    write_tree(root, {"top.sls": "base:\n  '*':\n    - good\n    - probe\n", "good.sls": "good: true\n",
                      "probe.sls": text, **(extra or {})})
    for name, target in (links or {}).items():
        os.symlink(target, root / name)
    result = compile_pillar(tree)
    assert result.pillar["good"] is True
    assert SECRET not in json.dumps(result.pillar), "secret content leaked into the pillar"
    assert all(SECRET not in str(e) for e in result.errors), "secret content leaked into an error"
    return result


@pytest.mark.parametrize("text", [
    "a: 1\n{% include '../../etc/passwd' %}\n",
    "a: 1\n{% include '../outside/secret.yaml' %}\n",
    "a: 1\n{% import_yaml '/etc/passwd' as x %}\nb: {{ x }}\n",
    "a: 1\n{% import_yaml '../outside/secret.yaml' as x %}\nb: {{ x }}\n",
    "a: 1\n{% import_json '/etc/passwd' as x %}\n",
    "a: 1\n{% import_text '/etc/hostname' as x %}\nb: {{ x }}\n",
    "a: 1\n{% from '../outside/x.jinja' import y %}\nb: {{ y() }}\n",
    "a: 1\n{% from './../outside/x.jinja' import y %}\nb: {{ y() }}\n",
    "a: 1\n{% import '../outside/x.jinja' as m %}\n",
    "a: 1\n{% import_yaml 'sub/../../outside/secret.yaml' as x %}\nb: {{ x }}\n",
    "a: 1\n{% import_yaml 'salt://../outside/secret.yaml' as x %}\nb: {{ x }}\n",
    "a: 1\n{% import_yaml '..\\\\outside\\\\secret.yaml' as x %}\nb: {{ x }}\n",
    "a: 1\n{% include '/' ~ 'etc/passwd' %}\n",
])
def test_templates_cannot_leave_the_roots(tree, text: str) -> None:
    result = _compile_one(tree, text)
    (err,) = result.errors
    assert err.kind == ACCESS_DENIED
    assert "refused to load" in err.message
    assert (err.file, err.line) == (str(tree / "pillar" / "probe.sls"), 2)
    assert result.pillar["_errors"] == ["Rendering SLS 'probe' failed. Please see master log for details."]
    assert "a" not in result.pillar


def test_relative_import_beyond_the_root_from_a_nested_file(tree) -> None:
    extra = {"deep/er/probe.sls": "{% from '../../../outside/x.jinja' import y %}\nb: {{ y() }}\n"}
    root = tree / "pillar"
    write_tree(root, {"top.sls": "base:\n  '*':\n    - deep.er.probe\n", **extra})
    result = compile_pillar(tree)
    (err,) = result.errors
    assert err.kind == ACCESS_DENIED
    assert (err.file, err.line) == (str(root / "deep/er/probe.sls"), 1)
    assert SECRET not in json.dumps(result.pillar)


def test_relative_imports_inside_the_root_still_work(tree) -> None:
    root = tree / "pillar"
    write_tree(root, {"top.sls": "base:\n  '*':\n    - deep.er.probe\n",
                      "deep/er/probe.sls": "{% import_yaml '../../data.yaml' as d %}\nv: {{ d.v }}\n",
                      "data.yaml": "v: inside\n"})
    result = compile_pillar(tree)
    assert result.errors == []
    assert result.pillar == {"v": "inside"}


@pytest.mark.parametrize(("text", "link", "target"), [
    ("{% import_yaml 'link.yaml' as s %}\nb: {{ s }}\n", "link.yaml", "outside/secret.yaml"),
    ("{% import_yaml 'ldir/secret.yaml' as s %}\nb: {{ s }}\n", "ldir", "outside"),
    ("{% from 'lx.jinja' import y %}\nb: {{ y() }}\n", "lx.jinja", "outside/x.jinja"),
    ("{% include 'link.yaml' %}\n", "link.yaml", "outside/secret.yaml"),
])
def test_symlinks_out_of_the_roots_are_refused(tree, text: str, link: str, target: str) -> None:
    result = _compile_one(tree, text, links={link: tree / target})
    (err,) = result.errors
    assert err.kind == ACCESS_DENIED
    assert "resolves outside the roots" in err.message
    assert (err.file, err.line) == (str(tree / "pillar" / "probe.sls"), 1)


def test_an_sls_symlinked_out_of_the_roots_is_refused(tree) -> None:
    root = tree / "pillar"
    write_tree(root, {"top.sls": "base:\n  '*':\n    - good\n    - evil\n", "good.sls": "good: true\n"})
    os.symlink(tree / "outside" / "secret.sls", root / "evil.sls")
    result = compile_pillar(tree)
    assert result.pillar["good"] is True
    assert SECRET not in json.dumps(result.pillar)
    (err,) = result.errors
    assert err.kind == ACCESS_DENIED
    assert (err.file, err.line) == (str(root / "top.sls"), 2)


def test_a_symlink_inside_the_roots_is_fine(tree) -> None:
    root = tree / "pillar"
    write_tree(root, {"top.sls": "base:\n  '*':\n    - alias\n", "real/data.yaml": "v: 1\n",
                      "real/actual.sls": "{% import_yaml 'data_link.yaml' as d %}\nv: {{ d.v }}\n"})
    os.symlink(root / "real" / "actual.sls", root / "alias.sls")
    os.symlink(root / "real" / "data.yaml", root / "data_link.yaml")
    result = compile_pillar(tree)
    assert result.errors == []
    assert result.pillar == {"v": 1}


@pytest.mark.parametrize("sls", ["../outside/secret", "..outside.secret", "/etc/passwd", "a/../../outside/secret"])
def test_sls_names_cannot_leave_the_roots(tree, sls: str) -> None:
    root = tree / "pillar"
    write_tree(root, {"top.sls": f"base:\n  '*':\n    - '{sls}'\n"})
    source = LocalRoots({"base": [str(root)]})
    assert find_sls(source, "base", sls) is None
    result = compile_pillar(tree)
    assert SECRET not in json.dumps(result.pillar)
    assert [e.kind for e in result.errors] == ["missing_sls"]


@pytest.mark.parametrize("expr", [
    "''.__class__.__mro__",
    "grains.__class__",
    "salt.__class__.__init__.__globals__",
    "cycler.__init__.__globals__.os",
    "(1).__class__.__base__.__subclasses__()",
])
def test_templates_cannot_reach_python_internals(tree, expr: str) -> None:
    result = _compile_one(tree, f"a: 1\nb: {{{{ {expr} }}}}\n")
    (err,) = result.errors
    assert err.line == 2
    assert "b" not in result.pillar


def test_clean_relpath() -> None:
    assert clean_relpath("a/./b//c.sls") == "a/b/c.sls"
    for bad in ("/etc/passwd", "../x", "a/../../x", "a\\b", "a\x00b", "", ".", "a/.."):
        with pytest.raises(CompileError) as info:
            clean_relpath(bad)
        assert info.value.kind == ACCESS_DENIED


def test_join_relative() -> None:
    assert join_relative("a/b/c.sls", "./x.jinja") == "a/b/x.jinja"
    assert join_relative("a/b/c.sls", "../x.jinja") == "a/x.jinja"
    with pytest.raises(CompileError, match="leads outside the roots"):
        join_relative("a/c.sls", "../../x.jinja")


def test_saltenv_names_cannot_escape(tree) -> None:
    source = LocalRoots({"base": [str(tree / "pillar")]})
    for env in ("..", "../outside", "base/..", ""):
        assert source.get(env, "secret.sls") is None
