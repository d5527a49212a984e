"""The ``locale`` state module: ``present`` (a locale is generated) and ``system`` (the system's
``LANG``).

As Salt 3008 on Debian: a locale is available when ``locale -a`` lists it (names compared
normalised: ``en_US.UTF-8`` is ``en_US.utf8``); generating one enables its line in
``/etc/locale.gen`` (after checking ``/usr/share/i18n/SUPPORTED``) and runs ``locale-gen``. The
system locale is ``localectl``'s where systemd runs, else ``LANG=`` of ``/etc/default/locale``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F
from runtime.states._service_init import systemd_booted

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["present", "system"]


class LocaleError(Exception):
    pass


@dataclass(frozen=True)
class Files:
    root: str = "/"

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel.lstrip("/"))


def normalize(name: str) -> str:
    """Salt's normalize_locale: ``en_US.UTF-8`` -> ``en_US.utf8``."""
    lang, dot, rest = name.partition(".")
    if not dot:
        return name
    codeset, at, modifier = rest.partition("@")
    codeset = codeset.lower().replace("-", "")
    return f"{lang}.{codeset}" + (f"@{modifier}" if at else "")


def available() -> list[str]:
    res = cmdrun.run(["locale", "-a"], cwd="/")
    return res.stdout.split()


def supported_line(name: str) -> str:
    """The line of SUPPORTED / locale.gen for ``name``: ``en_US.UTF-8 UTF-8`` (Salt's join)."""
    parts = name.split()
    if len(parts) > 1:
        return name
    codeset = name.partition(".")[2].partition("@")[0]
    return f"{name} {codeset}" if codeset else name


def enable_in_locale_gen(files: Files, name: str) -> bool:
    """Uncomment (or append) the locale's line in /etc/locale.gen; whether the file changed."""
    line = supported_line(name)
    supported = files.path("/usr/share/i18n/SUPPORTED")
    if os.path.exists(supported) and not re.search(rf"(?m)^{re.escape(line)}$", F.read_bytes(supported).decode()):
        raise LocaleError(f'The provided locale "{line}" is not found in /usr/share/i18n/SUPPORTED')
    path = files.path("/etc/locale.gen")
    text = F.read_bytes(path).decode() if os.path.exists(path) else ""
    pattern = re.compile(rf"(?m)^[ \t]*#[ \t]*{re.escape(line)}[ \t]*$")
    if re.search(rf"(?m)^{re.escape(line)}[ \t]*$", text):
        return False
    new = pattern.sub(line, text, count=1) if pattern.search(text) else text + ("" if not text or text.endswith(
        "\n") else "\n") + f"{line}\n"
    if os.path.exists(path):
        F.write_preserving(path, new.encode())
    else:
        F.atomic_write(path, new.encode(), 0o644)
    return True


def generate_command(name: str) -> list[str]:
    if shutil.which("locale-gen"):
        return ["locale-gen", supported_line(name)]
    lang, _, codeset = name.partition(".")
    return ["localedef", "--force", "-i", lang, "-f", codeset, name, "--quiet"]


def present(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """The locale ``name`` is generated (available to programs)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None, "comment": ""}
    if normalize(name) in {normalize(x) for x in available()}:
        return dict(ret, result=True, comment=f"Locale {name} is already present")
    if ctx.test:
        return dict(ret, comment=f"Locale {name} needs to be generated")
    try:
        enable_in_locale_gen(Files(), name)
        res = cmdrun.run(generate_command(name), cwd="/", timeout=600)
    except (LocaleError, OSError, cmdrun.CommandError) as exc:
        return dict(ret, result=False, comment=f"Failed to generate locale {name}: {exc}")
    if res.retcode != 0 or normalize(name) not in {normalize(x) for x in available()}:
        return dict(ret, result=False, comment=f"Failed to generate locale {name}: {(res.stderr or res.stdout).strip()}")
    return dict(ret, result=True, changes={"locale": name}, comment=f"Generated locale {name}")


def current_lang(files: Files) -> str:
    if files.root == "/" and systemd_booted() and shutil.which("localectl"):
        out = cmdrun.run(["localectl", "status"], cwd="/").stdout
        found = re.search(r"LANG=(\S+)", out)
        return found.group(1) if found else ""
    path = files.path("/etc/default/locale")
    if not os.path.exists(path):
        return ""
    found = re.search(r'(?m)^LANG=(.*)$', F.read_bytes(path).decode())
    return found.group(1).replace('"', "").strip() if found else ""


def set_lang(files: Files, name: str) -> None:
    if files.root == "/" and systemd_booted() and shutil.which("localectl"):
        res = cmdrun.run(["localectl", "set-locale", f"LANG={name}"], cwd="/")
        if res.retcode != 0:
            raise LocaleError(res.stderr.strip())
        return
    path = files.path("/etc/default/locale")
    text = F.read_bytes(path).decode() if os.path.exists(path) else ""
    line = f'LANG="{name}"'
    new = re.sub(r"(?m)^LANG=.*$", line, text) if re.search(r"(?m)^LANG=", text) else (
        text + ("" if not text or text.endswith("\n") else "\n") + line + "\n")
    if os.path.exists(path):
        F.write_preserving(path, new.encode())
    else:
        F.atomic_write(path, new.encode(), 0o644)


def system(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """The system locale (``LANG``) is ``name``."""
    return apply_system(ctx, name, Files())


def apply_system(ctx: StateContext, name: str, files: Files) -> dict[str, Any]:
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None, "comment": ""}
    try:
        if current_lang(files) == name:
            return dict(ret, result=True, comment=f"System locale {name} already set")
        if ctx.test:
            return dict(ret, comment=f"System locale {name} needs to be set")
        set_lang(files, name)
    except (LocaleError, OSError, cmdrun.CommandError) as exc:
        return dict(ret, result=False, comment=f"Failed to set system locale: {exc}")
    return dict(ret, result=True, changes={"locale": name}, comment=f"Set system locale {name}")
