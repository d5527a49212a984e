"""Pure text transformations behind file.replace, file.blockreplace, file.line and file.append.

Each function takes the current content and returns the new content; the state functions
compare, diff and write. The semantics follow Salt 3008's ``file`` execution module.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any


class EditError(Exception):
    """The edit cannot be made (markers missing, ambiguous anchors, bad flags, ...)."""


# ---------------------------------------------------------------------------
# replace


def regex_flags(flags: Any) -> re.RegexFlag:
    """Salt's flag forms: an int (default 8 = MULTILINE), a name, or a list of names."""
    if isinstance(flags, re.RegexFlag):
        return flags
    if isinstance(flags, bool):
        raise EditError(f'Invalid re flags: "{flags}"')
    if isinstance(flags, int):
        return re.RegexFlag(flags)
    if isinstance(flags, str):
        flags = [flags]
    if isinstance(flags, Iterable) and not isinstance(flags, Mapping):
        out = re.RegexFlag(0)
        for flag in flags:
            value = getattr(re.RegexFlag, str(flag).upper(), None)
            if not value:
                raise EditError(f"Invalid re flag given: {flag}")
            out |= value
        return out
    raise EditError(
        f'Invalid re flags: "{flags}", must be given either as a single flag string, '
        "a list of strings, or as an integer"
    )


def _compile(pattern: str | bytes, flags: re.RegexFlag) -> re.Pattern:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise EditError(f"Invalid regular expression {pattern!r}: {exc}") from None


def replace_content(
    data: bytes,
    pattern: str,
    repl: Any,
    count: int = 0,
    flags: Any = 8,
    append_if_not_found: bool = False,
    prepend_if_not_found: bool = False,
    not_found_content: Any = None,
    backslash_literal: bool = False,
) -> bytes:
    """Salt's ``file.replace`` on the whole content (bytes, so binary-safe)."""
    if append_if_not_found and prepend_if_not_found:
        raise EditError("Only one of append and prepend_if_not_found is permitted")
    re_flags = regex_flags(flags)
    cpattern = _compile(str(pattern).encode(), re_flags)
    repl_b = str(repl).encode()
    nfc = str(not_found_content).encode() if not_found_content not in (None, "") else None
    content = nfc if nfc is not None and (prepend_if_not_found or append_if_not_found) else repl_b
    try:
        result, nrepl = cpattern.subn(repl_b.replace(b"\\", b"\\\\") if backslash_literal else repl_b,
                                      data, int(count))
    except (re.error, IndexError) as exc:
        raise EditError(f"Invalid replacement {repl!r}: {exc}") from None
    found = nrepl > 0
    if (prepend_if_not_found or append_if_not_found) and not found:
        probe = re.compile(b"^" + re.escape(content) + b"($|(?=\r\n))", re_flags)
        found = bool(probe.search(data))
    if not found and (append_if_not_found or prepend_if_not_found):
        lines = result.splitlines(True)
        addition = (nfc if nfc is not None else repl_b) + os.linesep.encode()
        if prepend_if_not_found:
            lines.insert(0, addition)
        else:
            if lines and not lines[-1].endswith(os.linesep.encode()):
                lines[-1] += os.linesep.encode()
            lines.append(addition)
        result = b"".join(lines)
    return result


# ---------------------------------------------------------------------------
# blockreplace


def blockreplace_content(
    text: str,
    marker_start: str,
    marker_end: str,
    content: str = "",
    append_if_not_found: bool = False,
    prepend_if_not_found: bool = False,
    insert_before_match: str | None = None,
    insert_after_match: str | None = None,
    append_newline: bool | None = None,
) -> str:
    """Salt's ``file.blockreplace``: replace the lines between the markers by ``content``."""
    exclusive = [append_if_not_found, prepend_if_not_found, bool(insert_before_match), bool(insert_after_match)]
    if sum(bool(x) for x in exclusive) > 1:
        raise EditError("Only one of append_if_not_found, prepend_if_not_found, "
                        "insert_before_match, and insert_after_match is permitted")
    for value in (insert_before_match, insert_after_match):
        if value is not None and not isinstance(value, str):
            raise EditError("RegEx expected in insert_before_match / insert_after_match")
    content = "" if content is None else str(content)
    if append_newline is None and not content.endswith((os.linesep, "\n")):
        append_newline = True
    split_content = [piece for win_line in content.split("\r\n") for piece in win_line.split("\n")]
    line_count = len(split_content)

    def add_content(linesep: str, lines: list[str] | None = None, include_start: bool = True,
                    end_line: str | None = None) -> list[str]:
        if lines is None:
            lines = []
            include_start = True
        end = (marker_end if end_line is None else end_line).rstrip("\r\n") + linesep
        if include_start:
            lines.append(marker_start + linesep)
        for index, content_line in enumerate(split_content, 1):
            if index != line_count:
                lines.append(content_line + linesep)
            elif append_newline:
                lines.append(content_line + linesep)
                lines.append(end)
            else:
                lines.append(content_line + end)
        if not split_content:
            lines.append(end)
        return lines

    orig: list[str] = []
    new: list[str] = []
    in_block = False
    block_found = False
    linesep: str | None = None
    for line in text.splitlines(True):
        keep = True
        if linesep is None:
            linesep = "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else os.linesep
        if marker_start in line:
            in_block = True
        elif in_block:
            keep = False
            pos = line.find(marker_end)
            if pos != -1:
                in_block = False
                block_found = True
                add_content(linesep, lines=new, include_start=False, end_line=line[pos:])
        orig.append(line)
        if keep:
            new.append(line)
    if linesep is None:
        linesep = os.linesep
    if in_block:
        raise EditError("Unterminated marked block. End of file reached before marker_end.")
    if not block_found:
        if prepend_if_not_found:
            new = add_content(linesep) + new
            block_found = True
        elif append_if_not_found:
            if new and not new[-1].endswith(linesep):
                new[-1] += linesep
            add_content(linesep, lines=new)
            block_found = True
        elif insert_before_match or insert_after_match:
            regex = str(insert_before_match or insert_after_match)
            matches = [i for i, item in enumerate(orig) if re.search(regex, item)]
            if matches:
                idx = matches[0]
                for line in add_content(linesep):
                    if insert_after_match:
                        idx += 1
                    new.insert(idx, line)
                    if insert_before_match:
                        idx += 1
                block_found = True
    if not block_found:
        raise EditError("Cannot edit marked block. Markers were not found in file.")
    return "".join(new)


# ---------------------------------------------------------------------------
# line


def _eol(line: str) -> str:
    found = re.search("((?<!\r)\n|\r(?!\n)|\r\n)$", line)
    return found.group() if found else ""


def _with_indent(src: str, line: str, indent: bool) -> str:
    if not indent:
        return line
    prefix = []
    for char in src:
        if char not in ("\t", " "):
            break
        prefix.append(char)
    return "".join(prefix) + line.lstrip()


def _with_eol(src: str, line: str) -> str:
    return line.rstrip() + (_eol(src) or os.linesep)


def _matching(lines: list[str], regex: str | None) -> list[str] | None:
    if not lines or not regex:
        return None
    try:
        compiled = re.compile(regex, re.DOTALL)
    except re.error as exc:
        raise EditError(f"{exc}: '{regex}'") from None
    return [line for line in lines if compiled.search(line) or line.count(regex)]


def _exactly_one(found: list[str] | None, what: str) -> None:
    count = len(found or [])
    if count != 1:
        msg = "more than" if count > 1 else "no" if count == 0 else "less than"
        raise EditError(f'Found {msg} expected occurrences in "{what}" expression')


def _set_line(lines: list[str], content: str | None, match: str | None, mode: str,
              location: str | None, before: str | None, after: str | None, indent: bool) -> list[str]:
    if not match and before is None and after is None:
        match = content
    after_m = _matching(lines, after)
    before_m = _matching(lines, before)
    match_m = _matching(lines, match)
    if not lines and mode in ("delete", "replace"):
        return []
    if mode == "delete":
        if match_m:
            lines = [line for line in lines if line != match_m[0]]
        return lines
    if mode == "replace":
        if match_m:
            idx = lines.index(match_m[0])
            original = lines.pop(idx)
            lines.insert(idx, _with_indent(original, content or "", indent))
        return lines
    assert content is not None
    if mode == "insert":
        if before is None and after is None and location is None:
            raise EditError('On insert either "location" or "before/after" conditions are required.')
        if location:
            if location == "end":
                if lines and lines[-1] == "":
                    # the file ends with a newline: the new line goes before that end, not after
                    # it (Salt 3008 appends after it, leaving a blank line and no final newline)
                    lines.insert(len(lines) - 1, _with_indent("", content, indent))
                else:
                    lines.append(_with_indent(lines[-1], content, indent) if lines else content)
            elif location == "start":
                if lines:
                    lines.insert(0, _with_eol(lines[0], content))
                else:
                    lines = [content + os.linesep]
            else:
                raise EditError(f"Unknown location '{location}': use start or end")
        elif before_m and after_m:
            _exactly_one(before_m, "before")
            _exactly_one(after_m, "after")
            last = lines.index(before_m[0])
            lines.insert(last, _with_indent(lines[last], content, indent))
        elif after_m:
            _exactly_one(after_m, "after")
            idx = lines.index(after_m[0])
            nxt = lines[idx + 1] if idx + 1 < len(lines) else None
            if nxt is None or nxt.rstrip("\r\n") != content.rstrip("\r\n"):
                lines.insert(idx + 1, _with_indent(lines[idx], content, indent))
        elif before_m:
            _exactly_one(before_m, "before")
            idx = lines.index(before_m[0])
            if lines[idx - 1].rstrip("\r\n") != content.rstrip("\r\n"):
                lines.insert(idx, _with_indent(lines[idx], content, indent))
        else:
            raise EditError("Neither before or after was found in file")
        return lines
    # ensure (Salt tests the lists of matching lines, not the patterns)
    if before_m and after_m:
        _exactly_one(after_m, "after")
        _exactly_one(before_m, "before")
        after_idx = lines.index(after_m[0])
        before_idx = lines.index(before_m[0])
        if not any(line.lstrip() == content for line in lines):
            if after_idx + 1 == before_idx:
                lines.insert(after_idx + 1, _with_indent(lines[after_idx], content, indent))
            elif after_idx + 2 == before_idx:
                lines[after_idx + 1] = _with_indent(lines[after_idx], content, indent)
            else:
                raise EditError('Found more than one line between boundaries "before" and "after".')
    elif before_m:
        _exactly_one(before_m, "before")
        idx = lines.index(before_m[0])
        if idx == 0 or lines[idx - 1].rstrip("\r\n") != content.rstrip("\r\n"):
            lines.insert(idx, _with_indent(lines[idx - 1], content, indent))
    elif after_m:
        _exactly_one(after_m, "after")
        idx = lines.index(after_m[0])
        if idx + 1 >= len(lines) or lines[idx + 1].rstrip("\r\n") != content.rstrip("\r\n"):
            lines.insert(idx + 1, _with_indent(lines[idx], content, indent))
    else:
        raise EditError("Wrong conditions? Unable to ensure line without knowing where to put it "
                        "before and/or after.")
    return lines


LINE_MODES = ("insert", "ensure", "delete", "replace")


def line_content(text: str, content: Any = None, match: str | None = None, mode: str | None = None,
                 location: str | None = None, before: str | None = None, after: str | None = None,
                 indent: bool = True) -> str:
    """Salt's ``file.line`` on a text."""
    mode = mode.lower() if isinstance(mode, str) else mode
    if mode not in LINE_MODES:
        if mode is None:
            raise EditError("Mode was not defined. How to process the file?")
        raise EditError(f'Unknown mode: "{mode}"')
    if mode != "delete" and content is None:
        raise EditError('Content can only be empty if mode is "delete"')
    content_s = None if content is None else str(content)
    if before is None and after is None and not match:
        match = content_s
    body = text.splitlines(True)
    if body and _eol(body[-1]):
        body.append("")
    if not text and mode in ("delete", "replace"):
        body = []
    body = _set_line(body, content_s, match, mode, location, before, after, indent)
    if body:
        for idx, line in enumerate(body):
            if not _eol(line) and idx + 1 < len(body):
                prev = idx - 1 if idx else 1
                body[idx] = _with_eol(body[prev], line)
        if body[-1] == "":
            body.pop()
    return "".join(body)


# ---------------------------------------------------------------------------
# append


def whitespace_split_regex(text: str) -> str:
    """Salt's ``build_whitespace_split_regex``: match ``text`` ignoring whitespace changes."""
    regex = ""
    for line in text.splitlines():
        lexer = shlex.shlex(line)
        lexer.whitespace_split = True
        lexer.commenters = ""
        if "'\\\"" in line:
            lexer.quotes = ""
        elif "'" in line:
            lexer.quotes = '"'
        elif '"' in line:
            lexer.quotes = "'"
        try:
            parts = [re.escape(part) for part in lexer]
        except ValueError:
            parts = [re.escape(part) for part in line.split()]
        regex += r"(?:[\s]+)?{}(?:[\s]+)?".format(r"(?:[\s]+)?".join(parts))
    return rf"(?m)^{regex}$"


def text_list(value: Any) -> list[str]:
    """Salt's ``_validate_str_list``: a string, or a list whose items become strings."""
    if isinstance(value, bytes):
        return [value.decode("utf-8", errors="replace")]
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [item if isinstance(item, str) else str(item) for item in value]
    return [str(value)]


def lines_to_append(current: str, chunks: list[str], ignore_whitespace: bool = True) -> list[str]:
    """The lines of ``chunks`` not yet present in ``current`` (Salt's file.append test)."""
    out: list[str] = []
    for chunk in chunks:
        regex = whitespace_split_regex(chunk) if ignore_whitespace else chunk
        try:
            present = re.search(regex, current, re.MULTILINE) is not None
        except re.error:
            present = chunk in current
        if present:
            continue
        out.extend(chunk.splitlines())
    return out


def append_lines(current: bytes, lines: list[str]) -> bytes:
    """Salt's ``file.append`` module: ensure a final newline, then one line per item."""
    sep = os.linesep.encode()
    data = current
    if data and not data.endswith(sep):
        data += sep
    return data + b"".join(line.encode() + sep for line in lines)
