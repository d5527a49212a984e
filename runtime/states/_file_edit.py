"""file.replace, file.blockreplace, file.line, file.append: edits inside an existing file.

Every edit is computed in memory (``_textedit``), reported as a unified diff under the
changes key ``diff`` and written atomically with the file's mode and owner kept.
``replace`` and ``blockreplace`` leave the previous content in ``<file>.bak`` (Salt's
default ``backup: .bak``); ``line`` with ``backup: True`` in ``<file>.<timestamp>``.
"""

from __future__ import annotations

import difflib
import os
import time
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F
from runtime.states import _source as S
from runtime.states import _textedit as T

if TYPE_CHECKING:
    from runtime.states import StateContext


def _check_file(name: str) -> str:
    if not os.path.isabs(name):
        return f"Specified file {name} is not an absolute path"
    if not os.path.exists(name):
        return f"{name}: file not found"
    return ""


def _finish(ctx: StateContext, ret: dict[str, Any], diff: Any, would: str) -> dict[str, Any]:
    if diff:
        ret["changes"]["diff"] = diff
        ret["result"] = None if ctx.test else True
        ret["comment"] = would if ctx.test else "Changes were made"
    else:
        ret["result"] = True
        ret["comment"] = "No changes needed to be made"
    return ret


def _rendered_sources(ctx: StateContext, source: Any, sources: Any, template: Any,
                      defaults: Any, context: Any) -> list[str]:
    """Salt's ``_get_template_texts``: every source, rendered, in order."""
    urls: list[str] = []
    if source:
        urls.append(str(source))
    if sources:
        urls.extend(str(s) for s in (sources if isinstance(sources, list) else [sources]))
    texts = []
    for url in urls:
        got = S.fetch(ctx, url)
        if got is None:
            raise S.SourceError(f"Failed to load template file {url}")
        text = got.data.decode("utf-8", errors="replace")
        if template:
            text = S.render(ctx, text, template, context, defaults, url)
        texts.append(text)
    return texts


# ---------------------------------------------------------------------------
# replace


def replace(
    ctx: StateContext,
    name: str,
    pattern: str,
    repl: Any,
    count: int = 0,
    flags: Any = 8,
    bufsize: Any = 1,
    append_if_not_found: bool = False,
    prepend_if_not_found: bool = False,
    not_found_content: Any = None,
    backup: Any = ".bak",
    show_changes: bool = True,
    ignore_if_missing: bool = False,
    backslash_literal: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Regex search and replace over the whole file (``flags`` default 8 = MULTILINE)."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.replace")
    problem = _check_file(name)
    if problem:
        if ignore_if_missing and "file not found" in problem:
            ret["comment"] = "No changes needed to be made"
            return ret
        return F.fail(ret, problem)
    path = os.path.realpath(name)
    try:
        original = F.read_bytes(path)
    except OSError as exc:
        return F.fail(ret, f"Unable to open file '{path}'. Exception: {exc}")
    if F.is_binary(original):
        return F.fail(ret, f"Cannot perform string replacements on a binary file: {path}")
    try:
        new = T.replace_content(original, pattern, repl, count, flags, append_if_not_found,
                                prepend_if_not_found, not_found_content, backslash_literal)
    except T.EditError as exc:
        return F.fail(ret, str(exc))
    changed = new.splitlines(True) != original.splitlines(True)
    diff: Any = F.unified_diff(F.split_lines(original), F.split_lines(new)) if changed else ""
    if changed and not show_changes:
        diff = True
    if changed and not ctx.test:
        try:
            if backup:
                F.copy_backup(path, f"{path}{backup}")
            F.write_preserving(path, new)
        except OSError as exc:
            return F.fail(ret, f"Unable to write file '{path}': {exc.strerror or exc}")
    return _finish(ctx, ret, diff, "Changes would have been made")


# ---------------------------------------------------------------------------
# blockreplace


def blockreplace(
    ctx: StateContext,
    name: str,
    marker_start: str = "#-- start managed zone --",
    marker_end: str = "#-- end managed zone --",
    source: Any = None,
    source_hash: Any = None,
    template: Any = "jinja",
    sources: Any = None,
    source_hashes: Any = None,
    defaults: Any = None,
    context: Any = None,
    content: Any = "",
    append_if_not_found: bool = False,
    prepend_if_not_found: bool = False,
    backup: Any = ".bak",
    show_changes: bool = True,
    append_newline: Any = None,
    insert_before_match: Any = None,
    insert_after_match: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Maintain a block of text between two marker lines."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name, False)
    if not name:
        return F.fail(ret, "Must provide name to file.blockreplace")
    problem = _check_file(name)
    if problem:
        return F.fail(ret, problem)
    text_content = "" if content is None else str(content)
    try:
        for text in _rendered_sources(ctx, source, sources, template, defaults, context):
            text_content += text
    except S.SourceError as exc:
        return F.fail(ret, str(exc))
    path = name
    try:
        original_b = F.read_bytes(path)
    except OSError as exc:
        return F.fail(ret, f"Failed to read from {path}: {exc.strerror}")
    if F.is_binary(original_b):
        return F.fail(ret, f"Cannot perform string replacements on a binary file: {path}")
    original = original_b.decode("utf-8")
    try:
        new = T.blockreplace_content(original, str(marker_start), str(marker_end), text_content,
                                     append_if_not_found, prepend_if_not_found, insert_before_match,
                                     insert_after_match, append_newline)
    except T.EditError as exc:
        ret["comment"] = f"Encountered error managing block: {exc}. See the log for details."
        return ret
    diff: Any = F.unified_diff(original.splitlines(True), new.splitlines(True))
    if diff and not show_changes:
        diff = True
    if diff and not ctx.test:
        try:
            if backup is not False and backup not in (None, ""):
                F.copy_backup(path, f"{path}{backup}")
            F.write_preserving(path, new.encode())
        except OSError as exc:
            ret["comment"] = f"Encountered error managing block: {exc}. See the log for details."
            return ret
    return _finish(ctx, ret, diff, "Changes would be made")


# ---------------------------------------------------------------------------
# line


def line(
    ctx: StateContext,
    name: str,
    content: Any = None,
    match: Any = None,
    mode: Any = None,
    location: Any = None,
    before: Any = None,
    after: Any = None,
    show_changes: bool = True,
    backup: Any = False,
    quiet: bool = False,
    indent: bool = True,
    create: bool = False,
    user: Any = None,
    group: Any = None,
    file_mode: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Line-based edit: ``mode`` ensure / replace / delete / insert, anchored by before/after/location."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.line")
    missing = not os.path.exists(name)
    if create and missing and not ctx.test:
        from runtime.states._file_managed import managed

        made = managed(ctx, name, user=user, group=group, mode=file_mode, replace=False)
        if made["result"] is False:
            return F.fail(ret, made["comment"])
        missing = not os.path.exists(name)
    if not (create and ctx.test and missing):
        problem = _check_file(name)
        if problem:
            return F.fail(ret, problem)
    mode = mode.lower() if isinstance(mode, str) else mode
    if mode is None:
        return F.fail(ret, "Mode was not defined. How to process the file?")
    if mode != "delete" and content is None:
        return F.fail(ret, "Content can only be empty if mode is ['delete']")
    path = os.path.realpath(name)
    if not missing and not os.path.isfile(path):
        if quiet:
            return _finish(ctx, ret, "", "")
        return F.fail(ret, f'File "{path}" does not exists or is not a file.')
    try:
        original = "" if missing else F.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        return F.fail(ret, f"Cannot edit lines of a binary file: {path}")
    try:
        new = T.line_content(original, content, match, mode, location, before, after, indent)
    except T.EditError as exc:
        return F.fail(ret, str(exc))
    diff: Any = ""
    if new != original:
        diff = F.unified_diff(original.splitlines(True), new.splitlines(True)) if show_changes else True
        if not ctx.test:
            try:
                if backup:
                    stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.localtime())
                    F.copy_backup(path, f"{path}.{stamp}")
                F.write_preserving(path, new.encode())
            except OSError as exc:
                return F.fail(ret, f"Unable to write {path}: {exc.strerror or exc}")
    return _finish(ctx, ret, diff, "Changes would be made")


# ---------------------------------------------------------------------------
# append


def append(
    ctx: StateContext,
    name: str,
    text: Any = None,
    makedirs: bool = False,
    source: Any = None,
    source_hash: Any = None,
    template: Any = "jinja",
    sources: Any = None,
    source_hashes: Any = None,
    defaults: Any = None,
    context: Any = None,
    ignore_whitespace: bool = True,
    show_changes: bool = True,
    **kwargs: Any,
) -> dict[str, Any]:
    """Append the lines of ``text`` that are not already in the file (creating it if needed)."""
    ret = F.new_ret(str(name) if name else "", False)
    if not name:
        return F.fail(ret, "Must provide name to file.append")
    name = os.path.expanduser(str(name))
    ret["name"] = name
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    try:
        rendered = _rendered_sources(ctx, source, sources, template, defaults, context)
    except S.SourceError as exc:
        return F.fail(ret, str(exc))
    if rendered:
        text = rendered
    if text is None:
        return F.fail(ret, "No text found to append. Nothing appended")
    parent = os.path.dirname(name)
    if not os.path.exists(name):
        if ctx.test:
            ret.update(result=None, changes={"new": name}, comment=f"File {name} is set to be created")
            return ret
        if not os.path.isdir(parent):
            if not makedirs:
                return F.fail(ret, f"Directory not present to touch file {name}")
            try:
                F.make_dirs(parent)
            except F.FileStateError as exc:
                return F.fail(ret, str(exc))
        try:
            F.atomic_write(name, b"", 0o666 & ~F.current_umask())
        except OSError as exc:
            return F.fail(ret, f"Unable to create {name}: {exc.strerror or exc}")
    try:
        current_b = F.read_bytes(name)
    except OSError as exc:
        return F.fail(ret, f"Unable to read {name}: {exc.strerror or exc}")
    current = current_b.decode("utf-8", errors="replace")
    chunks = T.text_list(text)
    to_add = T.lines_to_append(current, chunks, ignore_whitespace)
    slines = current.splitlines()
    nlines = slines + to_add
    diff: Any = ""
    if nlines != slines:
        if F.is_binary(current_b):
            diff = "Replace binary file"
        elif not show_changes:
            diff = "<show_changes=False>"
        else:
            diff = "\n".join(difflib.unified_diff(slines, nlines))
    if ctx.test:
        if diff:
            ret.update(result=None, comment=f"File {name} is set to be updated")
            ret["changes"]["diff"] = diff
        else:
            ret.update(result=True, comment=f"File {name} is in correct state")
        return ret
    if to_add:
        try:
            F.write_preserving(name, T.append_lines(current_b, to_add))
        except OSError as exc:
            return F.fail(ret, f"Unable to write {name}: {exc.strerror or exc}")
        ret["comment"] = f"Appended {len(to_add)} lines"
    else:
        ret["comment"] = f"File {name} is in correct state"
    if diff:
        ret["changes"]["diff"] = diff
    ret["result"] = True
    return ret
