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
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import SandboxedEnvironment

from compiler import jinja_filters, jinja_host_filters, salt_functions, yamlload
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


# Keys (not Jinja names: templates cannot reach them) of a render's context: the context itself,
# which travels with the render into every template it imports or includes, at any depth and with or
# without context; and the modules of the templates imported without context during the render.
RENDER_CONTEXT = "saltpan:render-context"
RENDER_MODULES = "saltpan:render-modules"


def with_globals(template: jinja2.Template, extra: Mapping[str, Any]) -> jinja2.Template:
    """A copy of a (cached) template whose globals also hold extra (and carry it on to the templates
    it imports); the cache stays untouched.  A render context (extra[RENDER_CONTEXT] is extra) is
    shared as it is, so one render keeps one context at every depth."""
    bound = object.__new__(type(template))
    bound.__dict__.update(template.__dict__)
    if extra.get(RENDER_CONTEXT) is extra:
        context = extra
    else:
        context = dict(extra)
        context[RENDER_CONTEXT] = context
        context[RENDER_MODULES] = {}
    # one dict (the context over the template's globals), not a ChainMap: Jinja copies a template's
    # globals into every new context, and iterating a ChainMap for that was an eighth of a pillar
    # compile; the render context's keys are all set before this (only nested values change later)
    bound.globals = {**template.globals, **context}
    bound._module = None
    return bound


class SaltTemplate(jinja2.Template):
    """Salt renders with the whole render context in the environment's globals, so every template a
    render loads (``import``, ``from ... import``, ``include``, ``import_yaml`` ..., with or without
    context, at any depth) sees grains, salt, pillar, opts, tpldir, sls ...  Jinja passes globals one
    level only: these templates take the render context from the importer's context instead.

    As in Salt (a fresh Jinja environment per render, whose templates keep their module), a template
    imported without context is run once per render: its module is kept in the render context."""

    def new_context(self, vars: dict[str, Any] | None = None, shared: bool = False,  # noqa: A002
                    locals: Mapping[str, Any] | None = None) -> jinja2.runtime.Context:  # noqa: A002
        render = (vars or {}).get(RENDER_CONTEXT)
        if render is not None and RENDER_CONTEXT not in self.globals:
            return with_globals(self, render).new_context(vars, shared, locals)
        return super().new_context(vars, shared, locals)

    def _get_default_module(self, ctx: jinja2.runtime.Context | None = None) -> jinja2.environment.TemplateModule:
        if ctx is not None:
            render = ctx.get(RENDER_CONTEXT)
            if render is not None and RENDER_CONTEXT not in self.globals:
                modules = render[RENDER_MODULES]
                module = modules.get(id(self))
                if module is None or module[0] is not self:
                    module = modules[id(self)] = (self, with_globals(self, render).make_module())
                made: jinja2.environment.TemplateModule = module[1]
                return made
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

    def getitem(self, obj: Any, argument: Any) -> Any:
        found = super().getitem(obj, argument)
        if isinstance(found, jinja2.Undefined):
            missing = self._salt_undefined(obj, argument)
            return found if missing is None else missing
        return found

    def getattr(self, obj: Any, attribute: str) -> Any:
        found = super().getattr(obj, attribute)
        if isinstance(found, jinja2.Undefined):
            missing = self._salt_undefined(obj, attribute)
            return found if missing is None else missing
        return found

    def _salt_undefined(self, obj: Any, name: Any) -> jinja2.Undefined | None:
        """A missing salt function: undefined (as in Salt), saying why when it is called or printed."""
        hint = salt_functions.undefined_hint(obj, name)
        return None if hint is None else self.undefined(hint=hint, obj=obj, name=name)


def _load_filter(loader: Callable[[str], Any]) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        text = str(value)
        return loader(text)

    return apply


def _load_text(value: Any) -> str:
    return str(value)


class SerializerExtension(Extension):
    """Salt's import_* and load_* tags, and profile blocks (timed by Salt, rendered as is here)."""

    tags = {"import_yaml", "import_json", "import_text", "load_yaml", "load_json", "load_text", "profile"}

    def parse(self, parser: jinja2.parser.Parser) -> list[nodes.Node]:
        token = parser.stream.current
        if token.value == "profile":
            next(parser.stream)
            parser.stream.expect("name:as")
            parser.parse_expression()
            return parser.parse_statements(("name:endprofile",), drop_needle=True)
        if token.value.startswith("import_"):
            converter = token.value[len("import_"):]
            return self._parse_import(parser, converter)
        converter = token.value[len("load_"):]
        return self._parse_load(parser, converter)

    def _parse_import(self, parser: jinja2.parser.Parser, converter: str) -> list[nodes.Node]:
        # as Salt: `{% import_yaml 'x.yaml' as x [with|without context] %}` is an import whose module
        # (the rendered text) goes through load_yaml
        import_node = parser.parse_import()
        lineno = import_node.lineno
        convert = nodes.Assign(
            nodes.Name(import_node.target, "store", lineno=lineno),
            nodes.Filter(nodes.Name(import_node.target, "load", lineno=lineno), f"load_{converter}",
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
    raise jinja2.TemplateError(msg)


@jinja2.pass_context
def _show_full_context(ctx: jinja2.runtime.Context) -> Any:
    """Salt's show_full_context(): the template's variables, non-plain values as their repr."""
    return simple_types({key: value for key, value in ctx.get_all().items()   # what ctx.items() reads
                         if key not in (RENDER_CONTEXT, RENDER_MODULES)})


def simple_types(data: Any) -> Any:
    """salt.utils.data.simple_types_filter."""
    scalars = (str, int, float, bool)
    if isinstance(data, (list, tuple)):
        out = []
        for value in data:
            if value is not None:
                if isinstance(value, (dict, list)):
                    value = simple_types(value)
                elif not isinstance(value, (*scalars, list, tuple)):
                    value = repr(value)
            out.append(value)
        return out
    if isinstance(data, dict):
        simple = {}
        for key, value in data.items():
            if key is not None and not isinstance(key, scalars):
                key = repr(key)
            if value is not None and isinstance(value, (dict, list, tuple)):
                value = simple_types(value)
            elif value is not None and not isinstance(value, (*scalars, list, tuple)):
                value = repr(value)
            simple[key] = value
        return simple
    return data


@jinja2.pass_context
def _ifelse(ctx: jinja2.runtime.Context, *args: Any, tgt_type: str = "compound", minion_id: Any = None,
            merge: Any = None, merge_lists: bool = False) -> Any:
    """Salt's ifelse(target, value, ..., default): the value of the first target this minion matches."""
    if len(args) % 2 == 0:
        raise jinja2.TemplateError("The ifelse function must have an odd number of arguments!")
    if len(args) == 1:
        return args[0]
    default_key = "SALT_IFELSE_FUNCTION_DEFAULT"
    keys = ["*" if k is True else "SALT_IFELSE_MATCH_NOTHING" if k is False else k for k in args[::2]]
    lookup = dict(zip(keys, args[1::2], strict=False))
    lookup[default_key] = args[-1]
    salt = ctx.get("salt")
    if salt is None or "match.filter_by" not in salt:
        raise jinja2.TemplateError("ifelse needs the salt function match.filter_by, which is not available here")
    return salt["match.filter_by"](lookup, tgt_type=tgt_type, minion_id=minion_id, merge=merge,
                                   merge_lists=merge_lists, default=default_key)


def make_environment(source: FileSource, saltenv: str) -> SaltEnvironment:
    env = SaltEnvironment(
        loader=RootsLoader(source, saltenv),
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols", SerializerExtension],
        auto_reload=True,
        cache_size=800,
    )
    env.filters.update(jinja_filters.FILTERS)
    env.filters.update(jinja_host_filters.FILTERS)
    env.filters["yaml"] = jinja_filters.cached_yaml_filter()
    parsed = yamlload.ParseCache()  # imported map files parse to the same data render after render

    def load_yaml(value: Any) -> Any:
        return parsed.load(str(value))[0]

    env.filters["load_yaml"] = load_yaml
    env.filters["load_json"] = _load_filter(json.loads)
    env.filters["load_text"] = _load_text
    env.tests.update(jinja_filters.TESTS)
    env.globals["raise"] = _raise
    env.globals["odict"] = OrderedDict
    env.globals["show_full_context"] = _show_full_context
    env.globals["ifelse"] = _ifelse
    return env


def access_denied(exc: TemplateAccessDenied, display: str, line: int | None) -> CompileError:
    return CompileError(ACCESS_DENIED, exc.message or str(exc), display, line)
