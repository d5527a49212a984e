"""Source lines of Jinja output: which template line wrote each rendered line.

Only the tracked compile (``--explain``, schema violations) uses this; the
ordinary compile never loads it.

A second Jinja environment renders the same templates with *line marks*: an
extension rewrites every literal text token of a template (after Jinja's own
whitespace control has been applied, so output is otherwise unchanged) so
that it starts with an invisible mark naming the template file and its source
line, and so does the text after each of its newlines.  Stripping the marks
from the output gives back the plain text plus, for every output line, the
place that wrote it: the last mark seen before the line's first visible
character.  A line written by an expression (``{{ data | yaml }}``) so gets
the line of the expression, a line written by a macro gets the macro's line.

The caller compares the stripped text with the plain render and keeps the
mapping only when both are identical (a template that feeds captured text
through filters could see the marks); otherwise lines stay rendered lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream

from compiler.roots import FileSource

_OPEN, _SEP, _CLOSE = "\ue000", "\ue001", "\ue002"
_MARK = re.compile(f"{_OPEN}(\\d+){_SEP}(\\d+){_CLOSE}")

Place = tuple[str, int]  # (file shown to users, 1-based line)


class LineMarks(Extension):
    """Puts a mark before every newline of a template's literal text."""

    def __init__(self, environment: Any):
        super().__init__(environment)
        environment.extend(linemark_files=[])

    def _file_index(self, name: str) -> int:
        files: list[str] = self.environment.linemark_files  # type: ignore[attr-defined]
        try:
            return files.index(name)
        except ValueError:
            files.append(name)
            return len(files) - 1

    def filter_stream(self, stream: TokenStream) -> Iterator[Token]:
        index = self._file_index(stream.filename or stream.name or "<template>")
        for token in stream:
            if token.type == "data":
                pieces = token.value.split("\n")
                text = mark(index, token.lineno) + pieces[0]
                for n, piece in enumerate(pieces[1:], 1):
                    text += "\n" + mark(index, token.lineno + n) + piece
                token = Token(token.lineno, "data", text)
            yield token


def mark(file_index: int, line: int) -> str:
    return f"{_OPEN}{file_index}{_SEP}{line}{_CLOSE}"


def strip_marks(text: str) -> str:
    return _MARK.sub("", text)


def line_places(marked: str, files: list[str]) -> tuple[str, list[Place | None]]:
    """(text without marks, the place of each of its lines)."""
    places: list[Place | None] = []
    current: Place | None = None
    for line in marked.split("\n"):
        origin: Place | None = None
        visible = False
        position = 0
        for found in _MARK.finditer(line):
            if not visible and line[position:found.start()].strip():
                visible, origin = True, current
            current = (files[int(found.group(1))], int(found.group(2)))
            position = found.end()
        if not visible:
            origin = current
        places.append(origin)
    return strip_marks(marked), places


def unmarking(loader: Callable[[str], Any]) -> Callable[[Any], Any]:
    """A load_* filter that drops the marks of captured text before parsing it."""

    def apply(value: Any) -> Any:
        return loader(strip_marks(str(value)))

    return apply


def make_marking_environment(source: FileSource, saltenv: str) -> Any:
    """The sls Jinja environment with line marks (same loader, filters and sandbox)."""
    from compiler import jinja_env

    env = jinja_env.make_environment(source, saltenv)
    env.add_extension(LineMarks)
    for name in ("load_yaml", "load_json", "load_text"):
        env.filters[name] = unmarking(env.filters[name])
    return env
