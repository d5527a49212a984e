"""Class 11: template and data injection during pillar rendering.

Salt's Jinja reached Python internals through ``__class__.__mro__``, ``cycler.__init__
.__globals__`` and friends (server-side template injection gives code execution on the master),
its YAML loader built Python objects from tags, and minions could send pillar overrides that
reached ext_pillar.  saltpan renders in a sandbox (no attribute starting with ``_``, no unsafe
callables), loads YAML with the safe loader only, and compiles a minion's pillar from its
session id and the master's config alone.  The lab's pillar top gives the rogue one sls per
gadget (tests/security/lab.py INJECTION_SLS).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.security.guard import lab_attack
from tests.security.lab import INJECTION_SLS, Lab, data_cache_writes
from tests.unit.helpers import compile_pillar

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

SAFE_MESSAGE = "Rendering SLS 'inject.{}' failed. Please see master log for details."
INTERNALS = ("<class", "<function", "<module", "__builtins__", "__globals__", "__mro__", "__subclasses__", "uid=",
             "TemplateReference", "os.system", "Popen")
EVALUATED = ("<class", "<function", "<module", "<built-in", "<bound method", "uid=")   # a gadget that ran


def test_gadgets_in_pillar_templates_render_nothing(lab: Lab) -> None:
    with lab_attack(lab, allowed_writes=data_cache_writes(lab),
                    logs=[("master", r"pillar for minion rogue01: .*inject/mro\.sls.*SecurityError"),
                          ("master", r"pillar for minion rogue01: .*inject/yaml_apply\.sls.*python/object/apply")]) \
            as atk:
        for _ in range(3):   # asked three times: the errors are logged once (rate-limited)
            pillar = atk.record("pillar", lab.rogue.request({"cmd": "_pillar"}))["pillar"]
        errors = pillar["_errors"]
        assert sorted(errors) == sorted(SAFE_MESSAGE.format(name) for name in INJECTION_SLS), errors
        text = json.dumps(pillar)
        assert not [word for word in INTERNALS if word in text], text[:500]
        assert str(lab.base) not in text
        assert not lab.marker.exists(), "a YAML tag ran a command"


def test_pillar_overrides_never_reach_ext_pillar(lab: Lab) -> None:
    """What Salt's _pillar load carried to ext_pillar and overrides: ignored (the canaries of
    every minion's ext_pillar and pillar are checked by the guard)."""
    with lab_attack(lab, allowed_writes=data_cache_writes(lab),
                    logs=[("master", r"ignored ext, pillar_override in _pillar from minion rogue01 \(override\)")]) \
            as atk:
        for payload in (
            {"cmd": "_pillar", "pillar_override": {"secret": "mine"}, "ext": {"file_tree": {"root_dir": "/"}}},
            {"cmd": "_pillar", "extra_minion_data": {"id": "web01"}, "pillarenv": "base", "saltenv": "base"},
            {"cmd": "_pillar", "grains": {"id": "web01"}, "ext": [{"file_tree": {"root_dir": str(lab.roots / "ext")}}]},
            {"cmd": "_pillar", "pillarenv": "../ext", "saltenv": "../../"},
        ):
            reply = atk.record("pillar", lab.rogue.request(payload))
            pillar = reply.get("pillar", {})
            assert "ext_secret" not in pillar and pillar.get("secret") != "mine", pillar.keys()


# ---------------------------------------------------------------- the compiler alone (no daemons)

@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "secret.sls").write_text("leaked: SECRET-OUTSIDE\n")
    (tmp_path / "secret.txt").write_text("SECRET-OUTSIDE\n")
    return tmp_path


@pytest.mark.parametrize("name", sorted(INJECTION_SLS))
@pytest.mark.parametrize("safe", [True, False])
def test_each_gadget_fails_with_a_clear_error(outside: Path, name: str, safe: bool) -> None:
    marker = outside / "marker"
    text = INJECTION_SLS[name].replace("{marker}", str(marker)).replace("{secret_sls}", str(outside / "secret.sls"))
    result = compile_pillar(outside / "tree", {"top.sls": "base:\n  '*':\n    - probe\n", "probe.sls": text},
                            pillar_safe_render_error=safe)
    (err,) = result.errors
    assert err.kind in ("render_error", "access_denied")
    assert err.file == str(outside / "tree" / "pillar" / "probe.sls") and err.line == 1
    assert list(result.pillar) == ["_errors"]
    rendered = json.dumps(result.pillar)
    assert "SECRET-OUTSIDE" not in rendered and not marker.exists()
    assert not [word for word in EVALUATED if word in rendered], rendered
    if safe:
        assert result.pillar["_errors"] == ["Rendering SLS 'probe' failed. Please see master log for details."]


def test_yaml_python_tags_are_refused_with_a_clear_message(outside: Path) -> None:
    text = INJECTION_SLS["yaml_apply"].replace("{marker}", str(outside / "marker"))
    result = compile_pillar(outside / "tree", {"top.sls": "base:\n  '*':\n    - probe\n", "probe.sls": text})
    (err,) = result.errors
    assert "YAML tag '!!python/object/apply:os.system' is not allowed" in err.message, err.message
    assert not (outside / "marker").exists()


def test_errors_never_name_paths_outside_the_roots(outside: Path) -> None:
    """Even with pillar_safe_render_error off, a symlink out of the roots is refused without
    saying where it leads."""
    tree = outside / "tree"
    files = {"top.sls": "base:\n  '*':\n    - linked\n    - viajinja\n",
             "viajinja.sls": "{% import_yaml 'data.yaml' as d %}\nx: {{ d }}\n"}
    compile_pillar(tree, files)  # writes the tree
    os.symlink(outside / "secret.sls", tree / "pillar" / "linked.sls")
    os.symlink(outside / "secret.txt", tree / "pillar" / "data.yaml")
    result = compile_pillar(tree, pillar_safe_render_error=False)
    assert len(result.errors) == 2, result.errors
    text = json.dumps(result.pillar)
    assert "_errors" in result.pillar and "SECRET-OUTSIDE" not in text
    assert str(outside / "secret") not in text, text


def test_show_full_context_gives_the_templates_variables_as_text(outside: Path) -> None:
    """Salt's show_full_context() global (render_capture: globals/show_full_context) is no gadget:
    it gives the template's own variables (what ``{{ grains }}``, ``{{ opts }}`` ... already give),
    every value that is not plain data as its repr, a string: nothing it returns leads on to an
    object, so no attribute chain starts from it; the render's internal keys are left out."""
    files = {"top.sls": "base:\n  '*':\n    - probe\n",
             "probe.sls": "{% set c = show_full_context() %}\n"
                          "x: {{ c | json }}\n"
                          "chain: {{ c['cycler'].__init__ is undefined }}\n"}
    pillar = compile_pillar(outside / "tree", files, grains={"os": "Debian"}).pillar
    assert "_errors" not in pillar, pillar
    context = pillar["x"]
    assert {"grains", "pillar", "opts", "salt", "sls", "saltenv", "tpldir"} <= set(context)
    assert context["grains"]["os"] == "Debian" and context["sls"] == "probe"
    assert all(isinstance(v, (str, int, float, bool, dict, list)) or v is None for v in context.values())
    assert isinstance(context["cycler"], str) and isinstance(context["salt"], str)
    assert pillar["chain"] is True
    assert not [key for key in context if key.startswith("saltpan:")], sorted(context)
    text = json.dumps(context)
    assert not [word for word in ("__builtins__", "__globals__", "TemplateReference", "SECRET-OUTSIDE")
                if word in text], text[:500]
