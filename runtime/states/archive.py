"""The ``archive`` state module: ``extracted`` (a tar or zip archive unpacked into a directory).

As Salt 3008's: the archive (``salt://``, ``http(s)://``/``ftp://`` with ``source_hash``, or a
local path) is listed; unless ``enforce_toplevel: False`` it must hold a single top-level
directory (no tar-bomb); it is extracted when some member is missing under ``name`` (or with
``overwrite``), then owned by ``user``/``group``. Members with absolute paths or ``..`` are
refused, links may not point outside ``name``.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F
from runtime.states import _source as S

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["extracted"]

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tbz2", ".tar.xz", ".txz", ".tar.lzma", ".tlz")


class ArchiveError(Exception):
    pass


@dataclass(frozen=True)
class Member:
    path: str  # relative, without a trailing slash
    is_dir: bool
    shown: str = ""  # as the archive lists it (zip directories keep their "/"), for the changes


def format_of(source: str, given: Any) -> str:
    if given:
        fmt = str(given).lower()
        if fmt not in ("tar", "zip"):
            raise ArchiveError(f"Invalid archive_format '{given}'. Either set it to a supported value (tar, zip) "
                               "or remove this argument and the archive format will be guessed based on file "
                               "extension.")
        return fmt
    lower = source.split("?")[0].lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(_TAR_SUFFIXES):
        return "tar"
    raise ArchiveError("Unable to guess archive format, please pass an 'archive_format' argument.")


def _safe(path: str) -> str:
    """The member's path relative to the destination; ArchiveError when it would land outside."""
    posix = path.replace("\\", "/")
    clean = posixpath.normpath(posix) if posix.strip("/") else "."
    if posix.startswith("/") or clean == ".." or clean.startswith("../"):
        raise ArchiveError(f"Archive member '{path}' points outside the destination: refusing to extract")
    return "" if clean == "." else clean


def members(data_path: str, fmt: str) -> list[Member]:
    out: list[Member] = []
    try:
        if fmt == "zip":
            with zipfile.ZipFile(data_path) as zf:
                for info in zf.infolist():
                    name = _safe(info.filename.rstrip("/"))
                    if name:
                        out.append(Member(name, info.is_dir(), info.filename))
        else:
            with tarfile.open(data_path) as tf:
                for member in tf.getmembers():
                    name = _safe(member.name.rstrip("/"))
                    if member.issym() or member.islnk():  # checked before anything is written
                        target = member.linkname if member.islnk() else posixpath.join(posixpath.dirname(name),
                                                                                      member.linkname)
                        if member.linkname.startswith("/"):
                            raise ArchiveError(f"Archive member '{member.name}' links to an absolute path: refusing "
                                               "to extract")
                        _safe(target)
                    if name:
                        out.append(Member(name, member.isdir(), name))
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ArchiveError(f"Unable to list contents of the archive: {exc}") from None
    return out


def _toplevel(listing: list[Member]) -> set[str]:
    return {m.path.split("/", 1)[0] for m in listing}


def _missing(dest: str, listing: list[Member]) -> bool:
    for member in listing:
        path = os.path.join(dest, member.path)
        if member.is_dir and not os.path.isdir(path):
            return True
        if not member.is_dir and not os.path.lexists(path):
            return True
    return False


def _extract(data_path: str, fmt: str, dest: str) -> None:
    if fmt == "zip":
        with zipfile.ZipFile(data_path) as zf:
            for info in zf.infolist():
                _safe(info.filename)
            zf.extractall(dest)
            for info in zf.infolist():  # keep the modes zip stores for unix files
                mode = (info.external_attr >> 16) & 0o7777
                if mode and not info.is_dir():
                    os.chmod(os.path.join(dest, info.filename), mode)
        return
    with tarfile.open(data_path) as tf:
        tf.extractall(dest, filter="data")  # nothing outside dest (links included); modes and times kept


def _chown_tree(dest: str, listing: list[Member], user: Any, group: Any) -> bool:
    uid, gid = F.resolve_uid(user), F.resolve_gid(group)
    if uid is None and gid is None:
        return False
    changed = False
    for top in sorted(_toplevel(listing)):
        root = os.path.join(dest, top)
        paths = [root] + [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files]
        for path in paths:
            st = os.lstat(path)
            want_uid = st.st_uid if uid is None else uid
            want_gid = st.st_gid if gid is None else gid
            if (st.st_uid, st.st_gid) != (want_uid, want_gid):
                os.lchown(path, want_uid, want_gid)
                changed = True
    return changed


def _fetch(ctx: StateContext, source: str, source_hash: Any, skip_verify: bool, workdir: str) -> str:
    """A local path holding the archive (verified against source_hash)."""
    scheme = S._scheme(source)
    if scheme in ("", "file"):
        path = source[len("file://"):] if scheme == "file" else source
        if not os.path.isabs(path):
            raise ArchiveError(f"Source '{source}' is not an absolute path or a supported URL")
        if not os.path.isfile(path):
            raise ArchiveError(f"Source file '{path}' does not exist")
        if source_hash and not skip_verify:
            wanted = S.expected_hash(ctx, source_hash, source, None)
            if wanted is not None and S.hash_of(F.read_bytes(path), wanted[0]) != wanted[1]:
                raise ArchiveError(f"{path} does not match the desired source_hash {wanted[1]}")
        return path
    wanted = S.expected_hash(ctx, source_hash, source, None) if source_hash else None
    if scheme in S.REMOTE_SCHEMES and wanted is None and not skip_verify:
        raise ArchiveError(f"Unable to verify upstream hash of source file {source}, please set source_hash or set "
                           "skip_verify or use_etag to True")
    fetched = S.fetch(ctx, source)
    if fetched is None:
        raise ArchiveError(f"Source file '{source}' does not exist" if scheme != "salt"
                           else f"Source file {source} not found in saltenv '{ctx.saltenv}'")
    if wanted is not None and not skip_verify:
        actual = S.hash_of(fetched.data, wanted[0])
        if actual != wanted[1]:
            raise ArchiveError(f"File {source} was fetched, but the hash ({actual}) does not match the specified "
                               f"hash ({wanted[1]})")
    path = os.path.join(workdir, "archive")
    with open(path, "wb") as handle:
        handle.write(fetched.data)
    return path


def extracted(ctx: StateContext, name: str, source: Any = None, source_hash: Any = None, archive_format: Any = None,
              enforce_toplevel: Any = True, if_missing: str | None = None, user: Any = None, group: Any = None,
              overwrite: Any = False, clean: Any = False, skip_verify: Any = False, trim_output: Any = False,
              **kwargs: Any) -> dict[str, Any]:
    """The archive ``source`` is extracted under the directory ``name``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if not source:
        return F.fail(ret, "Must provide a source")
    source = str(source[0] if isinstance(source, list) else source)
    if not os.path.isabs(str(name)):
        return F.fail(ret, f"{name} is not an absolute path")
    dest = str(name).rstrip("/") + "/"
    if if_missing and os.path.exists(str(if_missing)):
        ret["comment"] = f"Path {if_missing} exists"
        return ret
    owner_error = F.check_user_group(user, group)
    if owner_error and not ctx.test:
        return F.fail(ret, owner_error)
    if os.path.exists(dest.rstrip("/")) and not os.path.isdir(dest.rstrip("/")):
        return F.fail(ret, f"{dest.rstrip('/')} exists and is not a directory")
    remote = S._scheme(source) not in ("", "file")
    if ctx.test and remote:
        ret.update(result=None, comment=f"Archive {source} would be cached (if necessary) and checked to discover "
                                        "if extraction is needed")
        return ret
    with tempfile.TemporaryDirectory(prefix="saltpan-archive-") as workdir:
        try:
            fmt = format_of(source, archive_format)
            path = _fetch(ctx, source, source_hash, bool(skip_verify), workdir)
            listing = members(path, fmt)
        except (ArchiveError, S.SourceError) as exc:
            return F.fail(ret, str(exc))
        if _true(enforce_toplevel):
            tops = _toplevel(listing)
            if len(tops) != 1 or not any(m.is_dir or "/" in m.path for m in listing if m.path.split("/")[0] in tops):
                return F.fail(ret, "Archive does not have a single top-level directory. To allow this archive to be "
                                   "extracted, set 'enforce_toplevel' to False. To avoid a 'tar-bomb' it may also be "
                                   "advisable to set a top-level directory by adding it to the 'name' value (for "
                                   f"example, setting 'name' to {dest}some_dir instead of {dest}).")
        needed = _true(overwrite) or _missing(dest, listing)
        if not needed:
            if user is not None or group is not None:
                if ctx.test:
                    ret["comment"] = "All files in archive are already present"
                    return ret
                if _chown_tree(dest, listing, user, group):
                    ret["changes"]["updated ownership"] = True
            ret["comment"] = "All files in archive are already present"
            return ret
        reason = "due to absence of one or more files/dirs" if not _true(overwrite) else "overwrite is set to True"
        if ctx.test:
            ret.update(result=None, comment=f"Archive {source} would be extracted to {dest}, {reason}")
            return ret
        created = not os.path.isdir(dest)
        try:
            if _true(clean):
                for top in _toplevel(listing):
                    if os.path.lexists(os.path.join(dest, top)):
                        F.remove_path(os.path.join(dest, top))
            os.makedirs(dest, exist_ok=True)
            _extract(path, fmt, dest)
            owned = _chown_tree(dest, listing, user, group) if (user is not None or group is not None) else False
        except (tarfile.TarError, zipfile.BadZipFile, OSError, ArchiveError) as exc:
            return F.fail(ret, f"Unable to extract {source} to {dest}: {exc}")
    if owned or (created and (user is not None or group is not None)):
        ret["changes"]["updated ownership"] = True
        uid = F.resolve_uid(user)
        if created and uid is not None:
            os.chown(dest, uid, -1)  # Salt owns the directory it made by the user (not the group)
    if created:
        ret["changes"]["directories_created"] = [dest]
    files = [m.shown or m.path for m in listing]
    ret["changes"]["extracted_files"] = files if not trim_output else files[:int(trim_output) if str(
        trim_output).isdigit() and not isinstance(trim_output, bool) else 100]
    ret["comment"] = f"{source} extracted to {dest}, {reason}"
    return ret


def _true(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on")
