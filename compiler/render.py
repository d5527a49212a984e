"""Renderer pipelines: a file's text -> data.

The pipeline comes from the file's shebang (``#!jinja|yaml``, ``#!yaml``,
``#!json``, ``#!py``, ``#!jinja|json``, ...) or from the configured default
(``renderer``, default ``jinja|yaml``).  Compiled Jinja templates and ``#!py``
code are cached per file text, so a fleet compile parses each file once; the
YAML parsed from a rendered text is cached by that text (minions of one role
mostly render the same text), each caller getting its own copy.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jinja2

from compiler import yamlload
from compiler.errors import ACCESS_DENIED, RENDER_ERROR, CompileError
from compiler.jinja_env import SaltEnvironment, TemplateAccessDenied, make_environment, with_globals
from compiler.roots import FileSource, SourceFile

DEFAULT_PIPE = "jinja|yaml"

# Legacy names Salt still accepts for a default renderer.
_LEGACY = {
    "yaml_jinja": "jinja|yaml",
    "json_jinja": "jinja|json",
    "jinja_yaml": "jinja|yaml",
    "yaml": "yaml",
    "json": "json",
    "py": "py",
}

TEXT_RENDERERS = {"jinja", "yaml", "yamlex", "json", "toml", "gpg", "py"}


@dataclass
class Rendered:
    """Result of rendering one file.

    ``lines``: the rendered line of every mapping key (``{("a", "b"): 3}``).
    ``places`` (tracked renders only): the file and source line that wrote each
    key, through Jinja (``{("a", "b"): ("/srv/pillar/a.sls", 7)}``); ``exact`` is
    false when the template's source lines could not be told and ``places``
    holds rendered lines of the file instead.
    """

    data: Any
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)
    places: dict[tuple[Any, ...], tuple[str, int]] = field(default_factory=dict)
    exact: bool = True


def parse_pipe(spec: str) -> list[str]:
    spec = _LEGACY.get(spec.strip(), spec)
    return [part.strip() for part in spec.split("|") if part.strip()]


def pipe_of(text: str, default: str) -> tuple[list[str], bool]:
    """The renderer pipeline for a file and whether its first line was a shebang."""
    if text.startswith("#!") and not text.startswith("#!/"):
        first = text.split("\n", 1)[0][2:]
        # as Salt: renderer names separated by '|', each may be followed by arguments
        names = [part.split()[0] for part in first.split("|") if part.strip()]
        if names:
            return parse_pipe("|".join(names)), True
    return parse_pipe(default), False


def template_vars(source_file: SourceFile, sls: str | None) -> dict[str, Any]:
    """The tpl*/sls* variables Salt puts in every template's context."""
    rel = source_file.relpath
    tpldir = posixpath.dirname(rel) or "."
    out: dict[str, Any] = {
        "tplpath": source_file.display,
        "tplfile": rel,
        "tpldir": tpldir,
        "tpldot": tpldir.replace("/", ".") if tpldir != "." else "",
    }
    if sls is not None:
        slspath = tpldir if tpldir != "." else ""
        out.update(
            sls=sls,
            slspath=slspath,
            sls_path=slspath.replace("/", "_"),
            slsdotpath=slspath.replace("/", "."),
            slscolonpath=slspath.replace("/", ":"),
        )
    return out


class Renderer:
    """Renders files of one FileSource. Safe to reuse across minions."""

    def __init__(self, source: FileSource, default_pipe: str = DEFAULT_PIPE,
                 blacklist: list[str] | None = None, whitelist: list[str] | None = None):
        self.source = source
        self.default_pipe = default_pipe or DEFAULT_PIPE
        self.blacklist = set(blacklist or [])
        self.whitelist = set(whitelist or [])
        self._envs: dict[str, SaltEnvironment] = {}
        self._templates: dict[tuple[str, str], jinja2.Template] = {}
        self._code: dict[tuple[str, str], Any] = {}
        self._parsed = yamlload.ParseCache()
        self._marking: Any = None  # compiler.linemap's renderer for tracked renders, made on first use

    def environment(self, saltenv: str) -> SaltEnvironment:
        env = self._envs.get(saltenv)
        if env is None:
            env = self._envs[saltenv] = make_environment(self.source, saltenv)
        return env

    def render(self, source_file: SourceFile, context: Mapping[str, Any], want_lines: bool = False,
               pipe: list[str] | None = None, track: bool = False) -> Rendered:
        """Render a file through its pipeline. Raises CompileError with file:line.

        ``track`` (implies want_lines) also finds the source line of every key
        through Jinja (``Rendered.places``); it renders Jinja twice.
        """
        text = source_file.text
        shebang_pipe, had_shebang = pipe_of(text, self.default_pipe)
        pipe = pipe or shebang_pipe
        for name in pipe:
            self._check_allowed(name, source_file)
        if had_shebang:
            # keep line numbers: blank the shebang line instead of removing it
            text = "\n" + text.split("\n", 1)[1] if "\n" in text else ""
        data: Any = text
        lines: dict[tuple[Any, ...], int] = {}
        line_places: list[Any] | None = None  # tracked: the source place of each line of `data`
        exact = True
        for position, name in enumerate(pipe):
            if name == "jinja":
                template_text = str(data)
                data = self._jinja(source_file, template_text, context)
                if track:
                    line_places, exact = self._marked_places(source_file, template_text, context, data)
            elif name in ("yaml", "yamlex"):
                data, lines = self._yaml(source_file, data, want_lines or track)
            elif name == "json":
                data = self._json(source_file, data)
            elif name == "toml":
                data = self._toml(source_file, data)
            elif name == "gpg":
                data = self._gpg(source_file, data)
            elif name == "py":
                if position != 0:
                    raise CompileError(RENDER_ERROR, "the py renderer must come first in a pipeline",
                                       source_file.display, 1)
                data = self._py(source_file, context)
            else:
                raise CompileError(RENDER_ERROR, f"renderer '{name}' is not available in saltpan "
                                   f"(supported: {', '.join(sorted(TEXT_RENDERERS))})",
                                   source_file.display, 1)
        if not track:
            return Rendered(data, lines)
        return Rendered(data, lines, _key_places(lines, line_places, source_file.display), exact)

    def _marked_places(self, source_file: SourceFile, text: str, context: Mapping[str, Any],
                       plain: str) -> tuple[list[Any] | None, bool]:
        """The source place of each line of a Jinja render, and whether it is exact (see compiler.linemap)."""
        from compiler import linemap

        if self._marking is None:
            self._marking = _MarkingJinja(self.source)
        try:
            marked = self._marking.render(source_file, text, context)
        except Exception:  # noqa: BLE001 - the plain render worked: fall back to rendered lines
            return None, False
        if text.endswith("\n"):
            marked += "\n"
        stripped, places = linemap.line_places(marked, self._marking.files(source_file.saltenv))
        if stripped != plain:
            return None, False
        return places, True

    def _check_allowed(self, name: str, source_file: SourceFile) -> None:
        if name in self.blacklist or (self.whitelist and name not in self.whitelist):
            raise CompileError(RENDER_ERROR, f"renderer '{name}' is disabled by renderer_blacklist/"
                               "renderer_whitelist", source_file.display, 1)

    # -- jinja -------------------------------------------------------------
    def template(self, source_file: SourceFile, text: str) -> jinja2.Template:
        key = (source_file.display, hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest())
        tmpl = self._templates.get(key)
        if tmpl is None:
            env = self.environment(source_file.saltenv)
            try:
                code = env.compile(text, name=source_file.relpath, filename=source_file.display)
            except jinja2.TemplateSyntaxError as exc:
                raise CompileError(RENDER_ERROR, f"Jinja syntax error: {exc.message}",
                                   source_file.display, exc.lineno) from None
            tmpl = env.template_class.from_code(env, code, env.make_globals(None), None)
            self._templates[key] = tmpl
        return tmpl

    def _jinja(self, source_file: SourceFile, text: str, context: Mapping[str, Any]) -> str:
        tmpl = with_globals(self.template(source_file, text), context)
        try:
            out = tmpl.render(context)
        except Exception as exc:  # noqa: BLE001 - any template failure is a render error
            raise jinja_error(exc, source_file.display) from None
        if text.endswith("\n"):
            out += "\n"  # Jinja drops the template's final newline; Salt adds it back
        return out

    def render_text(self, text: str, saltenv: str, relpath: str, display: str, context: Mapping[str, Any],
                    engine: str = "jinja") -> str:
        """Render a file template (file.managed `template: jinja`) with the sls Jinja environment."""
        if engine != "jinja":
            raise CompileError(RENDER_ERROR, f"template engine '{engine}' is not supported (use jinja)", display)
        return self._jinja(SourceFile(saltenv, relpath, display, text), text, context)

    # -- data formats --------------------------------------------------------
    def _yaml(self, source_file: SourceFile, data: Any, want_lines: bool) -> tuple[Any, dict[tuple[Any, ...], int]]:
        if not isinstance(data, str):
            return data, {}
        return self._parsed.load(data, source_file.display, want_lines)

    def _json(self, source_file: SourceFile, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        if not data.strip():
            return {}
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise CompileError(RENDER_ERROR, f"JSON syntax error: {exc.msg}", source_file.display,
                               exc.lineno) from None

    def _toml(self, source_file: SourceFile, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        import tomllib  # lazily, as the toml renderer is rare

        try:
            return tomllib.loads(data)
        except tomllib.TOMLDecodeError as exc:
            raise CompileError(RENDER_ERROR, f"TOML syntax error: {exc}", source_file.display) from None

    def _gpg(self, source_file: SourceFile, data: Any) -> Any:
        if "-----BEGIN PGP MESSAGE-----" in json.dumps(data, default=str):
            raise CompileError(RENDER_ERROR, "gpg-encrypted values are not supported by saltpan yet",
                               source_file.display)
        return data

    # -- py ----------------------------------------------------------------
    def _py(self, source_file: SourceFile, context: Mapping[str, Any]) -> Any:
        key = (source_file.display, hashlib.sha1(source_file.text.encode(),
                                                 usedforsecurity=False).hexdigest())
        code = self._code.get(key)
        if code is None:
            try:
                code = compile(source_file.text, source_file.display, "exec")
            except SyntaxError as exc:
                raise CompileError(RENDER_ERROR, f"Python syntax error in #!py file: {exc.msg}",
                                   source_file.display, exc.lineno) from None
            self._code[key] = code
        # Salt's #!py files read these names; they exist only inside the user module.
        module_globals: dict[str, Any] = {
            "__name__": f"saltpan_py_{source_file.relpath}",
            "__file__": source_file.display,
            "__grains__": context.get("grains", {}),
            "__opts__": context.get("opts", {}),
            "__pillar__": context.get("pillar", {}),
            "__salt__": context.get("salt", {}),
            "__sls__": context.get("sls"),
            "__env__": context.get("saltenv"),
            "__saltenv__": context.get("saltenv"),
        }
        # Salt's py renderer also provides them under plain names
        module_globals.update(salt=module_globals["__salt__"], grains=module_globals["__grains__"],
                              opts=module_globals["__opts__"], pillar=module_globals["__pillar__"],
                              sls=module_globals["__sls__"], saltenv=module_globals["__env__"])
        try:
            exec(code, module_globals)  # noqa: S102 - #!py is Salt's Python renderer
            run = module_globals.get("run")
            if not callable(run):
                raise CompileError(RENDER_ERROR, "#!py file defines no run() function",
                                   source_file.display, 1)
            return run()
        except CompileError:
            raise
        except Exception as exc:  # noqa: BLE001
            line = _traceback_line(exc, source_file.display)
            raise CompileError(RENDER_ERROR, f"#!py run() raised {type(exc).__name__}: {exc}",
                               source_file.display, line) from None


class _MarkingJinja:
    """Jinja environments with line marks (compiler.linemap), one per saltenv, templates cached."""

    def __init__(self, source: FileSource):
        self.source = source
        self._envs: dict[str, Any] = {}
        self._templates: dict[tuple[str, str], jinja2.Template] = {}

    def environment(self, saltenv: str) -> Any:
        from compiler import linemap

        env = self._envs.get(saltenv)
        if env is None:
            env = self._envs[saltenv] = linemap.make_marking_environment(self.source, saltenv)
        return env

    def files(self, saltenv: str) -> list[str]:
        files: list[str] = self.environment(saltenv).linemark_files
        return files

    def render(self, source_file: SourceFile, text: str, context: Mapping[str, Any]) -> str:
        key = (source_file.display, hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest())
        tmpl = self._templates.get(key)
        if tmpl is None:
            env = self.environment(source_file.saltenv)
            code = env.compile(text, name=source_file.relpath, filename=source_file.display)
            tmpl = self._templates[key] = env.template_class.from_code(env, code, env.make_globals(None), None)
        return with_globals(tmpl, context).render(context)


def _key_places(lines: dict[tuple[Any, ...], int], line_places: list[Any] | None, display: str) -> dict[tuple[Any, ...], tuple[str, int]]:
    """Each key's (file, line): through the Jinja line map when there is one, else the rendered line."""
    if line_places is None:
        return {path: (display, line) for path, line in lines.items()}
    out = {}
    for path, line in lines.items():
        place = line_places[line - 1] if 0 < line <= len(line_places) else None
        out[path] = place or (display, line)
    return out


def _traceback_line(exc: BaseException, filename: str) -> int | None:
    import traceback  # lazily: only errors need it

    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


def template_location() -> tuple[str | None, int | None]:
    """The template file and line being rendered by the calling thread (innermost), or (None, None):
    where a `salt` function was called from (compile --strict reports it)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return template.filename, template.get_corresponding_lineno(frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return None, None


def _deepest_template_frame(exc: BaseException) -> tuple[str | None, int | None]:
    import traceback  # lazily: only errors need it

    found: tuple[str | None, int | None] = (None, None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if "__jinja_exception__" in frame.f_globals:
            # Jinja's rewritten traceback: a stand-in frame at the template's own file and line
            found = (frame.f_code.co_filename, lineno)
        elif "__jinja_template__" in frame.f_globals:
            template = frame.f_globals["__jinja_template__"]
            found = (template.filename, template.get_corresponding_lineno(lineno))
    return found


def jinja_error(exc: BaseException, display: str) -> CompileError:
    """Turn any exception raised while rendering a template into a CompileError."""
    if isinstance(exc, TemplateAccessDenied):
        file, line = _deepest_template_frame(exc)
        return CompileError(ACCESS_DENIED, f"Jinja error: {exc.message}", file or display, line)
    if isinstance(exc, jinja2.TemplateSyntaxError):
        where = exc.filename or display
        return CompileError(RENDER_ERROR, f"Jinja syntax error: {exc.message}", where, exc.lineno)
    file, line = _deepest_template_frame(exc)
    if isinstance(exc, jinja2.TemplateNotFound):
        msg = f"Jinja error: cannot import '{exc.name}': no such file in the roots"
    elif isinstance(exc, jinja2.UndefinedError):
        msg = f"Jinja variable {exc.message}"
    elif isinstance(exc, CompileError):
        if exc.file and exc.file != "<string>":
            return exc
        # raised by our loader or a load_* filter: place it at the template line that asked for it
        detail = f" (line {exc.line} of the loaded data)" if exc.line else ""
        return CompileError(exc.kind, f"Jinja error: {exc.message}{detail}", file or display, line)
    else:
        msg = f"Jinja error: {type(exc).__name__}: {exc}"
    return CompileError(RENDER_ERROR, msg, file or display, line)
