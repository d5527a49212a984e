"""The docs stay true: config.md matches runtime/config.py, and local links resolve."""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

from runtime import config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, "docs")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def load_gen_config():
    spec = importlib.util.spec_from_file_location("gen_config", os.path.join(DOCS, "gen_config.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_md_is_up_to_date():
    gen_config = load_gen_config()
    with open(os.path.join(DOCS, "config.md"), encoding="utf-8") as fh:
        current = fh.read()
    assert current == gen_config.render(), "docs/config.md is stale: run `python docs/gen_config.py`"
    assert gen_config.main(["--check"]) == 0


def test_config_md_lists_every_option_with_its_default():
    gen_config = load_gen_config()
    text = gen_config.render()
    for key, option in config.OPTIONS.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{key}` |")), None)
        assert row is not None, f"{key} missing from docs/config.md"
        assert gen_config.format_default(key, option.default) in row


def test_a_changed_option_makes_the_check_fail(monkeypatch, capsys):
    gen_config = load_gen_config()
    changed = dict(config.OPTIONS)
    changed["pillar_opts"] = config.Option(True, "bool", "both", "changed meaning")
    monkeypatch.setattr(gen_config.config, "OPTIONS", changed)
    assert gen_config.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err


def test_an_option_of_unknown_kind_stops_the_generator(monkeypatch):
    gen_config = load_gen_config()
    changed = dict(config.OPTIONS)
    changed["new_key"] = config.Option(None, "mystery", "both", "a new kind")
    monkeypatch.setattr(gen_config.config, "OPTIONS", changed)
    with pytest.raises(SystemExit, match="mystery"):
        gen_config.render()


@pytest.mark.parametrize("page", ["README.md", "docs/README.md", "docs/compile.md", "docs/config.md", "docs/fleet.md",
                                  "docs/development.md"])
def test_local_links_resolve(page):
    path = os.path.join(REPO, page)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    targets = LINK.findall(CODE.sub("", text))
    if page != "docs/config.md":
        assert targets, f"{page}: no local links found (is the pattern still right?)"
    for target in targets:
        if re.match(r"^[a-z]+://", target):
            continue
        assert os.path.exists(os.path.join(os.path.dirname(path), target)), f"{page}: broken link {target}"
