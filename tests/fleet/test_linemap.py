"""Source lines through Jinja (compiler/linemap.py) for tracked renders."""

from __future__ import annotations

import textwrap
from pathlib import Path

from compiler.render import Renderer
from compiler.roots import LocalRoots


def render(tmp_path: Path, files: dict[str, str], name: str = "a.sls", context: dict | None = None):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    source = LocalRoots({"base": [str(tmp_path)]})
    renderer = Renderer(source)
    found = source.get("base", name)
    tracked = renderer.render(found, dict(context or {}), track=True)
    plain = renderer.render(found, dict(context or {}))
    assert tracked.data == plain.data
    return tracked, {path: (Path(file).name, line) for path, (file, line) in tracked.places.items()}


def test_whitespace_control_loops_and_expressions(tmp_path: Path) -> None:
    rendered, places = render(tmp_path, {"a.sls": """
        {% set sites = ['shop', 'blog'] %}
        web:
          port: {{ 40 * 2 }}
          sites:
        {%- for site in sites %}
            {{ site }}:
              root: /srv/{{ site }}
        {%- endfor %}
          extra:
            {{ {'a': 1, 'b': [1, 2]} | yaml(False) | indent(4) }}
        {%- if true %}
          last: true
        {%- endif %}
        """})
    assert rendered.exact
    assert places == {
        ("web",): ("a.sls", 2), ("web", "port"): ("a.sls", 3), ("web", "sites"): ("a.sls", 4),
        ("web", "sites", "shop"): ("a.sls", 6), ("web", "sites", "shop", "root"): ("a.sls", 7),
        ("web", "sites", "blog"): ("a.sls", 6), ("web", "sites", "blog", "root"): ("a.sls", 7),
        ("web", "extra"): ("a.sls", 9), ("web", "extra", "a"): ("a.sls", 10), ("web", "extra", "b"): ("a.sls", 10),
        ("web", "last"): ("a.sls", 12),
    }


def test_macros_and_includes_point_into_their_own_files(tmp_path: Path) -> None:
    _, places = render(tmp_path, {
        "macros.jinja": """
            {% macro service(name) -%}
            {{ name }}:
              enabled: true
              restart: always
            {%- endmacro %}
            """,
        "part.jinja": "included:\n  from: part\n",
        "a.sls": """
            {% from 'macros.jinja' import service %}
            services:
              {{ service('nginx') | indent(2) }}
            {% include 'part.jinja' %}
            after: 1
            """,
    })
    assert places[("services", "nginx")] == ("a.sls", 3)
    assert places[("services", "nginx", "enabled")] == ("macros.jinja", 3)
    assert places[("services", "nginx", "restart")] == ("macros.jinja", 4)
    assert places[("included", "from")] == ("part.jinja", 2)
    assert places[("after",)] == ("a.sls", 5)


def test_plain_yaml_and_shebangs_keep_file_lines(tmp_path: Path) -> None:
    rendered, places = render(tmp_path, {"a.sls": "#!yaml\n\na:\n  b: 1\n"})
    assert rendered.exact and places == {("a",): ("a.sls", 3), ("a", "b"): ("a.sls", 4)}


def test_captured_text_that_changes_falls_back_to_rendered_lines(tmp_path: Path) -> None:
    rendered, places = render(tmp_path, {"a.sls": """
        {% set body %}
        x
        y
        {% endset %}
        {# a filter that sees the marks in captured text #}
        size: {{ body | length }}
        """})
    assert not rendered.exact
    assert places == {("size",): ("a.sls", 3)}  # line 3 of the rendered text
    _, places = render(tmp_path, {"b.sls": """
        {% load_yaml as conf %}
        k: v
        {% endload %}
        value: {{ conf.k }}
        """}, name="b.sls")
    assert places == {("value",): ("b.sls", 4)}
