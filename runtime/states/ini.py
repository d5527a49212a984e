"""The ``ini`` state module (Salt's ``ini_manage``): options and sections of INI-style files.

The file is read as Salt's ``ini_manage`` reads it: options before the first ``[section]`` are
top-level, ``#``/``;`` lines are kept as comments, indented lines continue the previous value,
other lines are kept as they are; setting an option that is present commented out
(``#key = value``) takes the place of that comment. It is written back as Salt writes it:
``key = value`` (``key=value`` with ``no_spaces``), top-level options first, then each section
after a blank line. Writes are atomic, mode and owner kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["options_absent", "options_present", "sections_absent", "sections_present"]

_SECTION = re.compile(r"^\s*\[(.+?)\]\s*$", flags=re.M)
_COMMENT = re.compile(r"^\s*(#|;)\s*(.*)")
_INDENTED = re.compile(r"(\s+)(.*)")


class Section:
    """Ordered entries of one section (or of the top level): option name -> value; comments and
    unknown lines under keys starting with '#'; a nested Section for the top level's sections."""

    def __init__(self, name: str, separator: str = "=", no_spaces: bool = False):
        self.name = name
        self.sep = separator
        self.no_spaces = no_spaces
        self.items: dict[str, Any] = {}
        self._opt = re.compile(rf"(\s*)(.+?)\s*({re.escape(separator)})\s*(.*)\s*")

    def parse(self, text: str) -> None:
        comments = unknown = 0
        indent = ""
        for line in text.strip("\n").split("\n") if text.strip("\n") else []:
            if _COMMENT.match(line):
                comments += 1
                self.items[f"#comment{comments}"] = line
                continue
            indented = _INDENTED.match(line)
            if indented and indented.group(1).replace("\t", "    ") > indent and self.items:
                last = list(self.items)[-1]  # a continuation line of the previous entry
                self.items[last] = f"{self.items[last]}\n{line}"
                continue
            found = self._opt.match(line)
            if found:
                indent = found.group(1).replace("\t", "    ")
                self.items[found.group(2)] = found.group(4)
                continue
            unknown += 1
            self.items[f"#unknown{unknown}"] = line

    def options(self) -> dict[str, str]:
        return {k: v for k, v in self.items.items() if not k.startswith("#") and not isinstance(v, Section)}

    def sections(self) -> dict[str, Section]:
        return {k: v for k, v in self.items.items() if isinstance(v, Section)}

    def _uncomment(self, key: str) -> bool:
        """Put ``key`` where a commented-out ``#key = ...`` line is (Salt's _uncomment_if_commented)."""
        for name, value in list(self.items.items()):
            if name.startswith("#comment"):
                found = self._opt.match(value.lstrip("#"))
                if found and found.group(2) == key:
                    entries = list(self.items.items())
                    index = [n for n, _ in entries].index(name)
                    entries[index] = (key, None)
                    self.items = dict(entries)
                    return True
        return False

    def set(self, key: str, value: Any) -> dict[str, Any] | None:
        """Set one option; its change as Salt reports it, or None."""
        text = str(value)
        if key not in self.items:
            self._uncomment(key)
            self.items[key] = text
            return {"before": None, "after": text}
        if self.items[key] != text:
            before = self.items[key]
            self.items[key] = text
            return {"before": before, "after": text}
        return None

    def lines(self) -> list[str]:
        out = [f"\n[{self.name}]\n"]
        sep = " " if all(c == " " for c in self.sep) else (self.sep.strip() if self.no_spaces
                                                           else f" {self.sep.strip()} ")
        for name, value in self.items.items():
            if name.startswith("#"):
                out.append(f"{value}\n")
            elif not isinstance(value, Section):
                out.append(f"{name}{sep}{value}\n")
        for section in self.sections().values():
            out.extend(section.lines())
        return out


class IniFile(Section):
    def __init__(self, path: str, separator: str = "=", no_spaces: bool = False):
        super().__init__(path, separator, no_spaces)
        self.path = path
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = "\n".join(handle.read().splitlines())
            parts = _SECTION.split(text)
            self.parse(parts[0])
            for name, body in zip(parts[1::2], parts[2::2], strict=False):
                section = Section(name, separator)
                section.parse(body)
                self.items[name] = section

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.options())
        for name, section in self.sections().items():
            out[name] = section.options()
        return out

    def text(self) -> str:
        body = self.lines()[1:]  # the first line would be the file's own "[name]"
        if body:
            body[0] = body[0].lstrip("\n")
        return "".join(body)

    def save(self) -> None:
        data = self.text().encode()
        if os.path.exists(self.path):
            F.write_preserving(self.path, data)
        else:
            os.makedirs(os.path.dirname(self.path) or "/", exist_ok=True)
            F.atomic_write(self.path, data, 0o644)


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": "No anomaly detected"}


def options_present(ctx: StateContext, name: str, sections: Any = None, separator: str = "=", strict: Any = False,
                    no_spaces: Any = False, **kwargs: Any) -> dict[str, Any]:
    """The options (top-level ``key: value``, or ``section: {key: value}``) have these values
    (``strict``: and there are no others)."""
    ret = _ret(name)
    if ctx.test:
        ret["comment"] = ""
    sections = dict(sections or {})
    try:
        ini = IniFile(name, separator, bool(no_spaces))
    except OSError as exc:
        return dict(ret, result=False, comment=str(exc))
    current = ini.as_dict()
    changes: dict[str, Any] = {}
    top = {k: v for k, v in sections.items() if not isinstance(v, Mapping)}
    for key, value in top.items():
        if ctx.test:
            same = key in current and not isinstance(current[key], dict) and str(current[key]) == str(value)
            ret["comment"] += f"{'Unchanged' if same else 'Changed'} key {key}.\n"
            if not same:
                ret["result"] = None
        else:
            change = ini.set(key, value)
            if change:
                changes[key] = change
    if strict:
        for key in set(ini.options()) - set(top):
            if ctx.test:
                ret["comment"] += f"Removed key {key}.\n"
                ret["result"] = None
            else:
                changes[key] = {"before": ini.items.pop(key), "after": None}
        for sect in set(ini.sections()) - {k for k, v in sections.items() if isinstance(v, Mapping)}:
            if ctx.test:
                ret["comment"] += f"Removed section {sect}.\n"
                ret["result"] = None
            else:
                changes[sect] = {"before": ini.items.pop(sect).options(), "after": None}
    for sect, body in ((k, v) for k, v in sections.items() if isinstance(v, Mapping)):
        descr = f" in section {sect}" if sect else ""
        section = ini.items.get(sect)
        if not isinstance(section, Section):
            section = None
        sect_changes: dict[str, Any] = {}
        if strict and section is not None:
            for key in set(section.options()) - set(body):
                if ctx.test:
                    ret["comment"] += f"Deleted key {key}{descr}.\n"
                    ret["result"] = None
                else:
                    sect_changes[key] = {"before": section.items.pop(key), "after": None}
        if ctx.test:
            have = section.options() if section else {}
            for key, value in body.items():
                same = key in have and str(have[key]) == str(value)
                ret["comment"] += f"{'Unchanged' if same else 'Changed'} key {key}{descr}.\n"
                if not same:
                    ret["result"] = None
            continue
        if section is None:
            section = Section(sect, separator, bool(no_spaces))
            ini.items[sect] = section
            for key, value in body.items():
                section.set(key, value)
            changes[sect] = {"before": None, "after": section.options()}  # Salt's shape for a new section
            continue
        else:
            for key, value in body.items():
                change = section.set(key, value)
                if change:
                    sect_changes[key] = change
        if sect_changes:
            changes[sect] = sect_changes
    if ctx.test:
        return ret
    if changes:
        try:
            ini.save()
        except OSError as exc:
            return dict(ret, result=False, comment=f"Unable to write file '{name}'. Exception: {exc}")
        ret.update(changes=changes, comment="Changes take effect")
    return ret


def options_absent(ctx: StateContext, name: str, sections: Any = None, separator: str = "=",
                   **kwargs: Any) -> dict[str, Any]:
    """The options are not set: ``{section: [keys]}``, or ``{key: ...}`` for top-level ones."""
    ret = _ret(name)
    sections = dict(sections or {})
    try:
        ini = IniFile(name, separator)
    except OSError as exc:
        return dict(ret, result=False, comment=str(exc))
    if ctx.test:
        ret["comment"] = ""
        for sect, keys in sections.items():
            descr = f" in section {sect}" if sect else ""
            if isinstance(keys, list):
                section = ini.items.get(sect)
                have = section.options() if isinstance(section, Section) else {}
                for key in keys:
                    if not have.get(key):
                        ret["comment"] += f"Key {key}{descr} does not exist.\n"
                    else:
                        ret["comment"] += f"Deleted key {key}{descr}.\n"
                        ret["result"] = None
            elif not ini.options().get(sect):
                ret["comment"] += f"Key {sect} does not exist.\n"
            else:
                ret["comment"] += f"Deleted key {sect}.\n"
                ret["result"] = None
        ret["comment"] = ret["comment"] or "No changes detected."
        return ret
    for sect, keys in sections.items():
        if isinstance(keys, list):
            section = ini.items.get(sect)
            if not isinstance(section, Section):
                continue
            for key in keys:
                if key in section.options():
                    ret["changes"].setdefault(sect, {})[key] = section.items.pop(key)
        elif sect in ini.options():
            ret["changes"][sect] = ini.items.pop(sect)
    if ret["changes"]:
        ini.save()
        ret["comment"] = "Changes take effect"
    return ret


def sections_present(ctx: StateContext, name: str, sections: Any = None, separator: str = "=",
                     **kwargs: Any) -> dict[str, Any]:
    """The sections exist (``sections``: a list of names, or a mapping whose keys are used)."""
    ret = _ret(name)
    names = list(sections or [])
    ini = IniFile(name, separator)
    if ctx.test:
        ret["comment"] = "".join(f"Section unchanged {s}.\n" if isinstance(ini.items.get(s), Section)
                                 else f"Created new section {s}.\n" for s in names) or "No changes detected."
        if any(not isinstance(ini.items.get(s), Section) for s in names):
            ret["result"] = None
        return ret
    for sect in names:
        if not isinstance(ini.items.get(sect), Section):
            ini.items[sect] = Section(sect, separator)
            ret["changes"][sect] = {"before": None, "after": {}}
    if ret["changes"]:
        ini.save()
    ret["comment"] = "Changes take effect"
    return ret


def sections_absent(ctx: StateContext, name: str, sections: Any = None, separator: str = "=",
                    **kwargs: Any) -> dict[str, Any]:
    """The sections do not exist."""
    ret = _ret(name)
    ini = IniFile(name, separator)
    names = list(sections or [])
    if ctx.test:
        ret["comment"] = "".join(f"Deleted section {s}.\n" if isinstance(ini.items.get(s), Section)
                                 else f"Section {s} does not exist.\n" for s in names) or "No changes detected."
        if any(isinstance(ini.items.get(s), Section) for s in names):
            ret["result"] = None
        return ret
    for sect in names:
        section = ini.items.get(sect)
        if isinstance(section, Section):
            del ini.items[sect]
            ret["changes"][sect] = section.options()
            ret["comment"] = "Changes take effect"
    if ret["changes"]:
        ini.save()
    return ret
