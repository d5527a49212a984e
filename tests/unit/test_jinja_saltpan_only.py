"""Template behaviour with no Salt capture to compare against: what saltpan documents where Salt
fails or reads the host (docs/compile.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.errors import CompileError
from compiler.render import Renderer
from compiler.roots import LocalRoots, SourceFile
from compiler.salt_functions import SaltFunctions
from runtime.modules import ModuleEnv, live_functions, offline_functions

GRAINS = {"id": "m1", "os": "Debian", "os_family": "Debian"}


def render(template: str, live: bool = False, tmp: Path | None = None) -> str:
    env = ModuleEnv(opts={"id": "m1"}, grains=GRAINS, pillar={"role": "web"})
    factory = live_functions(env) if live else offline_functions()
    context: dict[str, Any] = {"grains": GRAINS, "pillar": env.pillar, "opts": env.opts, "saltenv": "base",
                               "salt": SaltFunctions(factory("m1", GRAINS, env.pillar, env.opts))}
    source = SourceFile("base", "t.sls", "t.sls", template)
    return Renderer(LocalRoots({})).render(source, context, pipe=["jinja"]).data


def test_ifelse_with_targets_works_where_salt_3008_fails() -> None:
    assert render("{{ ifelse('G@os:RedHat', 'rh', 'm*', 'mine', 'other') }}") == "mine"
    assert render("{{ ifelse(False, 'no', True, 'yes', 'dflt') }}") == "yes"
    with pytest.raises(CompileError, match="odd number of arguments"):
        render("{{ ifelse('a', 'b') }}")


def test_host_filters_read_the_host_only_when_live(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    assert render("{{ 'sh' | which }}") == "None"
    assert render("{{ 'sh' | which }}", live=True).endswith("/sh")
    assert render(f"{{{{ '{empty}' | is_empty }}}}") == "False"
    assert render(f"{{{{ '{empty}' | is_empty }}}}", live=True) == "True"
    assert render(f"{{{{ '{tmp_path}' | list_files | length }}}}", live=True) == "2"


def test_network_filters_are_refused_with_a_reason() -> None:
    with pytest.raises(CompileError, match="dns_check: saltpan does not resolve names"):
        render("{{ 'example.org' | dns_check(80) }}")
    with pytest.raises(CompileError, match="http_query: saltpan does not make HTTP requests"):
        render("{{ 'http://example.org' | http_query }}")


def test_json_query_without_jmespath_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jmespath", None)
    with pytest.raises(CompileError, match="json_query requires jmespath"):
        render("{{ {'a': 1} | json_query('a') }}")


def test_calling_a_missing_function_says_why() -> None:
    with pytest.raises(CompileError, match=r"salt\['state.apply'\] is undefined: 'state.apply' drives this "
                                           "minion's jobs"):
        render("{{ salt['state.apply']() }}")
    with pytest.raises(CompileError, match=r"salt\['grains.nosuch'\] is undefined: saltpan's module 'grains' "
                                           "has no function 'grains.nosuch'"):
        render("{{ salt.grains.nosuch() }}")
