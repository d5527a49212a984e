"""file.comment and file.uncomment: put a comment character in front of matching lines, or take
it away, as Salt 3008 does (its regular expressions included), with a ``.bak`` copy by default.
Written atomically, the file's mode and owner kept."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F
from runtime.states._file_edit import _check_file

if TYPE_CHECKING:
    from runtime.states import StateContext


def _search(text: str, pattern: str) -> bool:
    """Salt's file.search(multiline=True): the pattern anywhere, ^ and $ at line ends."""
    return re.search(pattern, text, re.MULTILINE) is not None


def _edit_lines(text: str, regex: str, char: str, comment: bool) -> str:
    """Salt's file.comment_line over the text."""
    body = regex.lstrip("^").rstrip("$")
    end = "$" if regex.endswith("$") else ""
    if comment:
        line_re = re.compile(("^" if regex.startswith("^") else "") + f"({body}){end}")
    else:
        line_re = re.compile(rf"^{char}\s*({body}){end}")
    out = []
    for line in text.splitlines(True):
        if line_re.match(line):
            line = f"{char}{line}" if comment else line.lstrip(char)
        out.append(line)
    return "".join(out)


def _read(ret: dict[str, Any], name: str, fun: str) -> str | None:
    if not name:
        F.fail(ret, f"Must provide name to file.{fun}")
        return None
    problem = _check_file(name)
    if problem:
        F.fail(ret, problem)
        return None
    data = F.read_bytes(os.path.realpath(name))
    if F.is_binary(data):
        F.fail(ret, f"Cannot perform string replacements on a binary file: {os.path.realpath(name)}")
        return None
    return data.decode("utf-8", errors="surrogateescape")


def _write(ret: dict[str, Any], name: str, old: str, new: str, backup: Any) -> bool:
    path = os.path.realpath(name)
    if new != old:
        try:
            if backup:
                F.copy_backup(path, f"{path}{backup}")
            F.write_preserving(path, new.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            F.fail(ret, f"Unable to write file '{path}': {exc.strerror or exc}")
            return False
        ret["changes"]["diff"] = F.unified_diff(old.splitlines(True), new.splitlines(True))
    return True


def comment(ctx: StateContext, name: str, regex: str, char: str = "#", backup: Any = ".bak",
            ignore_missing: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Comment out the lines matching ``regex``."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name, False)
    text = _read(ret, name, "comment")
    if text is None:
        return ret
    unanchored = re.sub(r"^(\(\?[iLmsux]\))?\^?(.*?)\$?$", r"\2", regex)
    commented = char + unanchored
    try:
        if not _search(text, rf"^(?!\s*{char})\s*" + unanchored):
            if _search(text, commented):
                ret.update(result=True, comment="Pattern already commented")
            elif ignore_missing:
                ret.update(result=True, comment="Pattern not found and ignore_missing set to True")
            else:
                F.fail(ret, f"{unanchored}: Pattern not found")
            return ret
        if ctx.test:
            ret.update(result=None, changes={name: "updated"}, comment=f"File {name} is set to be updated")
            return ret
        new = _edit_lines(text, regex, char, True)
    except re.error as exc:
        return F.fail(ret, f"Invalid regular expression {regex!r}: {exc}")
    if not _write(ret, name, text, new, backup):
        return ret
    ret["result"] = _search(new, commented)
    ret["comment"] = "Commented lines successfully" if ret["result"] else "Expected commented lines not found"
    return ret


def uncomment(ctx: StateContext, name: str, regex: str, char: str = "#", backup: Any = ".bak",
              **kwargs: Any) -> dict[str, Any]:
    """Take the comment character away from the commented lines matching ``regex``."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name, False)
    text = _read(ret, name, "uncomment")
    if text is None:
        return ret
    body = regex.lstrip("^")
    try:
        if not _search(text, f"{char}[ \t]*{body}"):
            if _search(text, f"^[ \t]*{body}"):
                ret.update(result=True, comment="Pattern already uncommented")
            else:
                F.fail(ret, f"{regex}: Pattern not found")
            return ret
        if ctx.test:
            ret.update(result=None, changes={name: "updated"}, comment=f"File {name} is set to be updated")
            return ret
        new = _edit_lines(text, regex, char, False)
    except re.error as exc:
        return F.fail(ret, f"Invalid regular expression {regex!r}: {exc}")
    if not _write(ret, name, text, new, backup):
        return ret
    ret["result"] = _search(new, f"^[ \t]*{body}")
    ret["comment"] = "Uncommented lines successfully" if ret["result"] else "Expected uncommented lines not found"
    return ret
