"""The Jinja environment sls files render in.

* sandboxed (no attribute access to Python internals), StrictUndefined, with
  the ``do`` and loop-control extensions Salt enables;
* a loader that reads only from the roots of one saltenv (relative ``./x`` and
  ``../x`` names resolve against the importing template, never past the root);
* Salt's tags ``import_yaml``, ``import_json``, ``import_text`` and
  ``load_yaml``, ``load_json``, ``load_text`` (``{% load_yaml as x %}...{% endload %}``);
* Salt's filters and tests;
* the render context visible to imported templates: Salt renders with the context in the
  environment's globals, so ``{% from 'map.jinja' import x %}`` (without ``with context``) sees
  grains, pillar, salt, sls... (``with_globals`` binds a context to a cached template).
"""

from __future__ import annotations

import json
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import SandboxedEnvironment

from compiler import jinja_filters, yamlload
from compiler.errors import ACCESS_DENIED, CompileError
from compiler.roots import FileSource, clean_relpath, join_relative


class RootsLoader(jinja2.BaseLoader):
    """Loads templates from one saltenv of a FileSource; refuses any escape."""

    def __init__(self, source: FileSource, saltenv: str):
        self.source = source
        self.saltenv = saltenv

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[..., Any]]:
        name = template[len("salt://"):] if template.startswith("salt://") else template
        try:
            rel = clean_relpath(name)
        except CompileError as exc:
            raise TemplateAccessDenied(template, exc.message) from None
        found = self.source.get(self.saltenv, rel)
        if found is None:
            raise jinja2.TemplateNotFound(template)
        return found.text, found.display, lambda: self.source.get(self.saltenv, rel) is found


class TemplateAccessDenied(jinja2.TemplateNotFound):
    """A template name that points outside the roots."""

    def __init__(self, name: str, reason: str):
        super().__init__(name, f"refused to load {name!r}: {reason}")
        self.reason = reason


def with_globals(template: jinja2.Template, extra: Mapping[str, Any]) -> jinja2.Template:
    """A copy of a (cached) template whose globals also hold extra; the cache stays untouched."""
    bound = object.__new__(type(template))
    bound.__dict__.update(template.__dict__)
    bound.globals = ChainMap(dict(extra), template.globals)
    bound._module = None
    return bound


class SaltTemplate(jinja2.Template):
    """Imports pass the importer's globals on, at every depth (Jinja passes them one level)."""

    def _get_default_module(self, ctx: jinja2.runtime.Context | None = None) -> jinja2.environment.TemplateModule:
        if ctx is not None:
            keys = ctx.globals_keys - self.globals.keys()
            if keys:
                return with_globals(self, {k: ctx.parent[k] for k in keys}).make_module()
        return super()._get_default_module(ctx)


class SaltEnvironment(SandboxedEnvironment):
    """Sandboxed environment with Salt's relative template names."""

    template_class = SaltTemplate

    def join_path(self, template: str, parent: str) -> str:
        if template.startswith("./") or template.startswith("../"):
            try:
                return join_relative(parent, template)
            except CompileError as exc:
                raise TemplateAccessDenied(template, exc.message) from None
        return template

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if attr.startswith("_"):
            return False
        return super().is_safe_attribute(obj, attr, value)


def _load_filter(loader: Callable[[str], Any]) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        text = str(value)
        return loader(text)

    return apply


def _load_text(value: Any) -> str:
    return str(value)


class SerializerExtension(Extension):
    """Salt's import_* and load_* tags."""

    tags = {"import_yaml", "import_json", "import_text", "load_yaml", "load_json", "load_text"}

    def parse(self, parser: jinja2.parser.Parser) -> list[nodes.Node]:
        token = parser.stream.current
        if token.value.startswith("import_"):
            converter = token.value[len("import_"):]
            return self._parse_import(parser, converter)
        converter = token.value[len("load_"):]
        return self._parse_load(parser, converter)

    def _parse_import(self, parser: jinja2.parser.Parser, converter: str) -> list[nodes.Node]:
        lineno = next(parser.stream).lineno
        template = parser.parse_expression()
        parser.stream.expect("name:as")
        target = parser.parse_assign_target(name_only=True)
        import_node = nodes.Import(template, target.name, False, lineno=lineno)
        convert = nodes.Assign(
            nodes.Name(target.name, "store", lineno=lineno),
            nodes.Filter(nodes.Name(target.name, "load", lineno=lineno), f"load_{converter}",
                         [], [], None, None, lineno=lineno),
            lineno=lineno,
        )
        return [import_node, convert]

    def _parse_load(self, parser: jinja2.parser.Parser, converter: str) -> list[nodes.Node]:
        lineno = next(parser.stream).lineno
        parser.stream.expect("name:as")
        target = parser.parse_assign_target(name_only=True)
        body = parser.parse_statements(("name:endload",), drop_needle=True)
        block = nodes.AssignBlock(nodes.Name(target.name, "store", lineno=lineno), None, body,
                                  lineno=lineno)
        convert = nodes.Assign(
            nodes.Name(target.name, "store", lineno=lineno),
            nodes.Filter(nodes.Name(target.name, "load", lineno=lineno), f"load_{converter}",
                         [], [], None, None, lineno=lineno),
            lineno=lineno,
        )
        return [block, convert]


def _raise(msg: str) -> None:
    raise jinja2.TemplateRuntimeError(msg)


def make_environment(source: FileSource, saltenv: str) -> SaltEnvironment:
    env = SaltEnvironment(
        loader=RootsLoader(source, saltenv),
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols", SerializerExtension],
        auto_reload=True,
        cache_size=800,
    )
    env.filters.update(jinja_filters.FILTERS)
    env.filters["load_yaml"] = _load_filter(yamlload.safe_load)
    env.filters["load_json"] = _load_filter(json.loads)
    env.filters["load_text"] = _load_text
    env.tests.update(jinja_filters.TESTS)
    env.globals["raise"] = _raise
    return env


def access_denied(exc: TemplateAccessDenied, display: str, line: int | None) -> CompileError:
    return CompileError(ACCESS_DENIED, exc.message or str(exc), display, line)
