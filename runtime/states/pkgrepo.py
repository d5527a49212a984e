"""The ``pkgrepo`` state module for APT: ``managed`` and ``absent``.

A repository is one source entry, named by its full line as in Salt
(``deb [signed-by=/etc/apt/keyrings/x.gpg] https://example.org/debian bookworm main``).
``managed`` finds it in ``/etc/apt/sources.list`` and ``/etc/apt/sources.list.d/*.list``
(and reads ``*.sources``), writes or rewrites its line in ``file``, installs its signing key
(``key_url``, ``key_text``, or ``keyid`` + ``keyserver``) and refreshes the package index;
``absent`` removes the entry (and the file, when nothing is left in it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from runtime.states import _apt_sources as S
from runtime.states import _files as F
from runtime.states import _source
from runtime.states.pkg import _run as run_apt

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "managed"]

TRUSTED_DIR = "/etc/apt/trusted.gpg.d"
_CAUTION = ("This may cause pkg states to behave differently than stated if this action is repeated without "
            "test=True, due to the differences in the configured repositories.")


def _apt_missing() -> bool:
    return shutil.which("apt-get") is None


def _ret(name: str) -> dict[str, Any]:
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def _true(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on")


def _list_arg(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _wanted(name: str, kwargs: dict[str, Any]) -> S.Entry:
    """The entry ``name`` describes, with ``comps``, ``architectures``, ``signedby``,
    ``disabled``/``enabled`` and ``comments`` applied."""
    entry = S.parse_repo(name)
    comps = list(entry.comps)
    comps += [comp for comp in _list_arg(kwargs.get("comps")) if comp not in comps]
    entry = replace(entry, comps=tuple(comps))
    if kwargs.get("architectures") is not None:
        entry = entry.with_option("arch", ",".join(_list_arg(kwargs["architectures"])))
    if kwargs.get("signedby"):
        entry = entry.with_option("signed-by", str(kwargs["signedby"]))
    if kwargs.get("disabled") is not None:
        entry = replace(entry, disabled=_true(kwargs["disabled"]))
    elif kwargs.get("enabled") is not None:
        entry = replace(entry, disabled=not _true(kwargs["enabled"]))
    if kwargs.get("comments"):
        comments = kwargs["comments"]
        text = " ".join(str(c) for c in comments) if isinstance(comments, list) else str(comments)
        entry = replace(entry, comment=text.strip())
    return entry


def _argument_problem(kwargs: dict[str, Any]) -> str | None:
    has = {key for key in ("key_url", "key_text", "keyid", "keyserver") if kwargs.get(key) is not None}
    if "key_url" in has and has & {"keyid", "keyserver"}:
        return 'You may not use both "keyid"/"keyserver" and "key_url" argument.'
    if "key_text" in has and has & {"keyid", "keyserver"}:
        return 'You may not use both "keyid"/"keyserver" and "key_text" argument.'
    if "key_text" in has and "key_url" in has:
        return 'You may not use both "key_url" and "key_text" argument.'
    if ("keyid" in has) != ("keyserver" in has):
        return "Both keyid and keyserver are needed to fetch a key from a key server."
    if "repo" in kwargs:
        return ("'repo' is not a supported argument for this state. The 'name' argument is probably what was "
                "intended.")
    if kwargs.get("enabled") is not None and kwargs.get("disabled") is not None:
        return "Only one of enabled/disabled is allowed"
    if kwargs.get("ppa"):
        return "PPAs (ppa:owner/name) are Ubuntu repositories; give the full 'deb ...' line on this system"
    return None


# -- keys ------------------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "repo"


def key_path(wanted: S.Entry, key_source: str | None) -> str:
    """Where the key goes: the entry's signed-by file, else a keyring apt trusts for every source."""
    if wanted.signedby and os.path.isabs(wanted.signedby):
        return wanted.signedby
    base = os.path.basename(key_source.split("?")[0]) if key_source else ""
    stem = re.sub(r"\.(gpg|asc|key|pub|pgp)$", "", base) or _slug(wanted.uri.split("://")[-1])
    return os.path.join(TRUSTED_DIR, f"saltpan-{_slug(stem)}.gpg")


def _gpg(args: list[str], data: bytes | None = None) -> bytes:
    if shutil.which("gpg") is None:
        raise RuntimeError("gpg is not installed (needed to convert or fetch the repository key)")
    proc = subprocess.run(["gpg", "--batch", "--quiet", "--no-tty", *args], input=data, capture_output=True,
                          timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"gpg {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _keyring_bytes(data: bytes, dest: str) -> bytes:
    armored = data.lstrip().startswith(b"-----BEGIN PGP")
    if dest.endswith(".asc"):
        if not armored:
            raise RuntimeError(f"{dest} must hold an ASCII-armored key, but the key given is binary")
        return data
    return _gpg(["--dearmor"], data) if armored else data


def keyserver_command(keyring: str, keyserver: str, keyids: list[str]) -> list[str]:
    return ["gpg", "--batch", "--no-default-keyring", "--keyring", keyring, "--keyserver", keyserver,
            "--recv-keys", *keyids]


def _key_data(ctx: StateContext, kwargs: dict[str, Any], dest: str) -> bytes | None:
    """The keyring bytes to install at ``dest`` (None: no key asked for)."""
    if kwargs.get("key_url"):
        url = str(kwargs["key_url"])
        fetched = _source.fetch(ctx, url if "://" in url or url.startswith("/") else url)
        if fetched is None:
            raise RuntimeError(f"Error: file not found: {url}")
        return _keyring_bytes(fetched.data, dest)
    if kwargs.get("key_text"):
        return _keyring_bytes(str(kwargs["key_text"]).encode(), dest)
    if kwargs.get("keyid"):
        import tempfile

        ids = [hex(k) if isinstance(k, int) else str(k) for k in
               (kwargs["keyid"] if isinstance(kwargs["keyid"], list) else [kwargs["keyid"]])]
        with tempfile.TemporaryDirectory() as home:
            keyring = os.path.join(home, "fetched.gpg")
            _gpg(["--homedir", home, *keyserver_command(keyring, str(kwargs["keyserver"]), ids)[2:]])
            return _gpg(["--homedir", home, "--no-default-keyring", "--keyring", keyring, "--export", *ids])
    return None


def _install_key(ctx: StateContext, kwargs: dict[str, Any], wanted: S.Entry) -> str | None:
    """Write the repository key; its path when it changed."""
    source = kwargs.get("key_url") or kwargs.get("keyid")
    dest = key_path(wanted, str(source) if source else None)
    data = _key_data(ctx, kwargs, dest)
    if data is None:
        return None
    if os.path.exists(dest) and F.read_bytes(dest) == data:
        return None
    os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
    F.atomic_write(dest, data, 0o644)
    return dest


def _key_missing(kwargs: dict[str, Any], wanted: S.Entry) -> str | None:
    """The key file a configured repository still lacks (only checked where it is known)."""
    if not any(kwargs.get(k) for k in ("key_url", "key_text", "keyid")):
        return None
    source = kwargs.get("key_url") or kwargs.get("keyid")
    dest = key_path(wanted, str(source) if source else None)
    return None if os.path.exists(dest) else dest


# -- writing ----------------------------------------------------------------------------------------

def _write(path: str, lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    if os.path.exists(path):
        F.write_preserving(path, data)
    else:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        F.atomic_write(path, data, 0o644)


def refresh_command(path: str | None) -> list[str]:
    """apt-get update for the index of one sources file (all sources when None)."""
    base = ["apt-get", "-q", "update"]
    if path is None:
        return base
    return base + ["-o", f"Dir::Etc::sourcelist={path}", "-o", "Dir::Etc::sourceparts=-",
                   "-o", "APT::Get::List-Cleanup=0"]


def _refresh(path: str | None) -> str:
    import time

    for _attempt in range(30):  # another apt run may hold the lists lock for a while
        res = run_apt(refresh_command(path))
        if res.retcode == 0 or "Could not get lock" not in (res.stderr + res.stdout):
            break
        time.sleep(2)
    if res.retcode != 0:
        return f"\nThe package index was not refreshed: {(res.stderr or res.stdout).strip()}"
    return ""


def managed(ctx: StateContext, name: str, file: str | None = None, refresh: Any = True, clean_file: Any = False,
            **kwargs: Any) -> dict[str, Any]:
    """The source entry ``name`` is configured (in ``file``), with its key; the index is refreshed."""
    ret = _ret(name)
    if _apt_missing():
        ret.update(result=False, comment="Repo management not implemented on this platform")
        return ret
    problem = _argument_problem(kwargs)
    if problem:
        ret.update(result=False, comment=problem)
        return ret
    if "refresh_db" in kwargs:
        refresh = kwargs["refresh_db"]
    try:
        wanted = _wanted(name, kwargs)
    except S.SourceSyntaxError as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    if file is not None and not (os.path.isabs(file) and file.endswith(".list")):
        ret.update(result=False, comment=f"file '{file}' must be an absolute path ending in .list")
        return ret
    entries = S.all_entries()
    pre = S.find(wanted, entries)
    target = file or (pre.file if pre else S.SOURCES_LIST)
    stale = bool(_true(clean_file) and file and any(
        line.strip() and not line.strip().startswith("#") and line.strip() != wanted.line()
        for line in S.file_lines(file)))
    missing_key = _key_missing(kwargs, wanted)
    if pre and pre.key() == wanted.key() and not stale and not missing_key:
        ret["comment"] = f"Package repo '{name}' already configured"
        return ret
    if pre and pre.deb822 and pre.key() != wanted.key():
        ret.update(result=False, comment=f"Package repo '{name}' is configured in {pre.file} (deb822 format); "
                                         "saltpan edits one-line .list entries only: change that file, or remove "
                                         "the entry from it and let this state write a .list file")
        return ret
    changes = _changes(pre, wanted)
    if missing_key:
        changes["key"] = {"old": None, "new": missing_key}
    if ctx.test:
        ret.update(result=None, changes=changes or {"repo": name},
                   comment=f"Package repo '{name}' would be configured. {_CAUTION}")
        return ret
    try:
        key_written = _install_key(ctx, kwargs, wanted)
    except (RuntimeError, _source.SourceError, OSError) as exc:
        ret.update(result=False, comment=f"Failed to configure repo '{name}': {exc}")
        return ret
    if key_written:
        changes["key"] = {"old": None if missing_key else key_written, "new": key_written}
    _apply(wanted, pre, target, _true(clean_file))
    ret["changes"] = changes
    ret["comment"] = f"Configured package repo '{name}'"
    if _true(refresh) and (changes or key_written):
        ret["comment"] += _refresh(target)
    return ret


def _changes(pre: S.Entry | None, wanted: S.Entry) -> dict[str, Any]:
    if pre is None:
        return {"repo": wanted.line()}
    out: dict[str, Any] = {}
    if pre.line() != wanted.line() and pre.key() != wanted.key():
        out["line"] = {"old": pre.line(), "new": wanted.line()}
    for attr in ("comps", "architectures", "disabled"):
        old, new = getattr(pre, attr), getattr(wanted, attr)
        if (sorted(old) if isinstance(old, (list, tuple)) else old) != (
                sorted(new) if isinstance(new, (list, tuple)) else new):
            out[attr] = {"old": list(old) if isinstance(old, tuple) else old,
                         "new": list(new) if isinstance(new, tuple) else new}
    return out


def _apply(wanted: S.Entry, pre: S.Entry | None, target: str, clean: bool) -> None:
    line = wanted.line()
    if clean:
        if pre and pre.file != target and not pre.deb822:
            _remove_line(pre)
        _write(target, [line])
        return
    if pre and not pre.deb822 and pre.file == target:
        lines = S.file_lines(target)
        lines[pre.index] = line
        _write(target, lines)
        return
    if pre and not pre.deb822:
        _remove_line(pre)
    _write(target, [*S.file_lines(target), line])


def _remove_line(entry: S.Entry) -> None:
    lines = S.file_lines(entry.file)
    del lines[entry.index]
    _write(entry.file, lines)


def absent(ctx: StateContext, name: str, keyid: Any = None, refresh: Any = True, **kwargs: Any) -> dict[str, Any]:
    """No source entry for ``name`` (its components removed from a shared entry); ``keyid``: also
    remove the key file this repository's key was installed to. The whole package index is
    refreshed afterwards, as Salt does (``refresh: False`` skips it)."""
    ret = _ret(name)
    if _apt_missing():
        ret.update(result=False, comment="Repo management not implemented on this platform")
        return ret
    try:
        wanted = S.parse_repo(name)
    except S.SourceSyntaxError as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    found = [e for e in S.all_entries() if e.same_source(wanted)
             and set(e.architectures) == set(wanted.architectures)
             and (set(e.comps) & set(wanted.comps) or not (e.comps or wanted.comps) or not wanted.comps)]
    if not found:
        ret["comment"] = f"Package repo {name} is absent"
        return ret
    in_deb822 = [e for e in found if e.deb822]
    if in_deb822:
        ret.update(result=False, comment=f"Package repo '{name}' is configured in {in_deb822[0].file} (deb822 "
                                         "format); saltpan edits one-line .list entries only")
        return ret
    if ctx.test:
        ret.update(result=None, comment=f"Package repo '{name}' will be removed. {_CAUTION}")
        return ret
    removed_files = []
    for path in sorted({e.file for e in found}):
        lines = S.file_lines(path)
        for entry in sorted((e for e in found if e.file == path), key=lambda e: -e.index):
            left = [c for c in entry.comps if c not in wanted.comps] if wanted.comps else []
            if left:
                lines[entry.index] = replace(entry, comps=tuple(left)).line()
            else:
                del lines[entry.index]
        if path.startswith(S.SOURCES_DIR + "/") and not S.Edit(path, lines).has_entries():
            os.unlink(path)
            removed_files.append(path)
        else:
            _write(path, lines)
    ret["changes"]["repo"] = name
    ret["comment"] = f"Removed repo {name}"
    if keyid is not None:
        dest = key_path(wanted, str(kwargs.get("key_url") or keyid))
        if os.path.exists(dest):
            os.unlink(dest)
            ret["changes"]["keyid"] = keyid
            ret["comment"] += f", and keyid {keyid}"
    if _true(refresh):
        ret["comment"] += _refresh(None)
    return ret
