"""APT source entries: the one-line format of ``*.list`` files, read-only deb822 ``*.sources``.

A one-line entry is ``[# ]type [opt=val ...] uri suite [component ...] [# comment]``, e.g.
``deb [arch=amd64 signed-by=/etc/apt/keyrings/x.gpg] https://example.org/debian bookworm main``.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field, replace

SOURCES_LIST = "/etc/apt/sources.list"
SOURCES_DIR = "/etc/apt/sources.list.d"
TYPES = ("deb", "deb-src")


class SourceSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    type: str
    uri: str
    dist: str
    comps: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # in the order written
    disabled: bool = False
    comment: str = ""
    file: str = ""
    index: int = -1  # line number in a .list file, stanza number in a .sources file
    deb822: bool = False

    def option(self, key: str) -> str | None:
        for name, value in self.options:
            if name == key:
                return value
        return None

    @property
    def architectures(self) -> list[str]:
        value = self.option("arch")
        return [a for a in value.split(",") if a] if value else []

    @property
    def signedby(self) -> str:
        return self.option("signed-by") or ""

    def with_option(self, key: str, value: str | None) -> Entry:
        options = tuple((k, v) for k, v in self.options if k != key)
        if value:
            options += ((key, value),)
        return replace(self, options=options)

    def line(self) -> str:
        opts = f" [{' '.join(f'{k}={v}' for k, v in self.options)}]" if self.options else ""
        text = f"{self.type}{opts} {self.uri} {self.dist}" + "".join(f" {c}" for c in self.comps)
        if self.comment:
            text += f" # {self.comment}"
        return f"# {text}" if self.disabled else text

    def same_source(self, other: Entry) -> bool:
        """Same type, URI (trailing slashes aside) and suite."""
        return (self.type == other.type and self.uri.rstrip("/") == other.uri.rstrip("/")
                and self.dist == other.dist)

    def key(self) -> tuple:
        """What "already configured" compares: the line with components sorted, and disabled."""
        return (self.type, self.uri.rstrip("/"), self.dist, tuple(sorted(self.comps)),
                tuple(sorted(self.options)), self.disabled)


_LINE = re.compile(r"^\s*(?P<type>deb|deb-src)\s+(?:\[(?P<opts>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<dist>\S+)"
                   r"(?P<comps>(?:\s+[^\s#]+)*)\s*(?:#(?P<comment>.*))?$")


def parse_line(text: str, file: str = "", index: int = -1) -> Entry | None:
    """An entry from one line (None for a blank line, a plain comment or something else)."""
    body = text.strip()
    disabled = False
    if body.startswith("#"):
        body = body.lstrip("#").strip()
        disabled = True
    match = _LINE.match(body)
    if not match:
        return None
    options: list[tuple[str, str]] = []
    for item in (match["opts"] or "").split():
        key, sep, value = item.partition("=")
        if not sep:
            return None
        options.append((key, value))
    return Entry(match["type"], match["uri"], match["dist"], tuple(match["comps"].split()), tuple(options),
                 disabled, (match["comment"] or "").strip(), file, index)


def parse_repo(name: str) -> Entry:
    """The entry a state's ``name`` describes; SourceSyntaxError when it is not one."""
    entry = parse_line(name)
    if entry is None or not entry.type:
        raise SourceSyntaxError(f"Name {name} is not valid. This must be the complete repo entry as seen in the "
                                "sources file (type [options] uri suite [components])")
    return entry


def _deb822(path: str) -> list[Entry]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    out = []
    for index, stanza in enumerate(re.split(r"\n\s*\n", text)):
        fields: dict[str, str] = {}
        last = None
        for raw in stanza.splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            if raw[:1].isspace() and last:
                fields[last] += " " + raw.strip()
                continue
            key, _, value = raw.partition(":")
            last = key.strip().lower()
            fields[last] = value.strip()
        enabled = fields.get("enabled", "yes").lower() not in ("no", "false", "0")
        options = []
        if fields.get("architectures"):
            options.append(("arch", ",".join(fields["architectures"].split())))
        if fields.get("signed-by") and not fields["signed-by"].startswith("-----"):
            options.append(("signed-by", fields["signed-by"]))
        for kind in fields.get("types", "").split():
            for uri in fields.get("uris", "").split():
                for suite in fields.get("suites", "").split():
                    out.append(Entry(kind, uri, suite, tuple(fields.get("components", "").split()), tuple(options),
                                     not enabled, "", path, index, deb822=True))
    return out


def source_files() -> list[str]:
    files = [SOURCES_LIST] if os.path.exists(SOURCES_LIST) else []
    return files + sorted(glob.glob(os.path.join(SOURCES_DIR, "*.list"))
                          + glob.glob(os.path.join(SOURCES_DIR, "*.sources")))


def read_file(path: str) -> list[Entry]:
    if path.endswith(".sources"):
        return _deb822(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    return [entry for index, text in enumerate(lines) if (entry := parse_line(text, path, index))]


def all_entries() -> list[Entry]:
    return [entry for path in source_files() for entry in read_file(path)]


def find(wanted: Entry, entries: list[Entry]) -> Entry | None:
    """Salt's get_repo: same type, URI and suite, and a shared component (or none asked for)."""
    for entry in entries:
        if entry.same_source(wanted) and (not wanted.comps or set(wanted.comps) & set(entry.comps)):
            return entry
    return None


def file_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return []


@dataclass
class Edit:
    """New content for one .list file."""

    path: str
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)

    def has_entries(self) -> bool:
        """Whether any source entry (enabled or not) is left: Salt deletes a file with none."""
        return any(parse_line(line) is not None for line in self.lines)
