"""``file.recurse``: a directory of the file server copied to the minion, file by file.

As Salt 3008: every file under ``salt://source/`` becomes a ``file.managed`` (with the
state's ``user``, ``group``, ``file_mode``, ``template``, ``context``, ``defaults`` ...) and
every directory holding one a ``file.directory`` (``dir_mode``); ``clean`` removes what the
source does not have. Results merge into one: changes keyed by path, comments of the parts
that did not simply succeed under ``#### path ####`` headings.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.states import _file_managed, _file_tree
from runtime.states import _files as F
from runtime.states import _source as S

if TYPE_CHECKING:
    from runtime.states import StateContext

_NOT_PASSED = ("mode", "makedirs")


def _pattern_matches(relpath: str, pattern: str) -> bool:
    if pattern.startswith("E@"):
        return re.search(pattern[2:], relpath) is not None
    return fnmatch.fnmatch(relpath, pattern)


def _selected(relpath: str, include_pat: Any, exclude_pat: Any, maxdepth: Any) -> bool:
    """Salt's _is_valid_relpath and check_include_exclude."""
    if not relpath or relpath.startswith(".."):
        return False
    if maxdepth is not None and relpath.count("/") > int(maxdepth):
        return False
    if include_pat and not _pattern_matches(relpath, str(include_pat)):
        return False
    return not (exclude_pat and _pattern_matches(relpath, str(exclude_pat)))


def _sources(source: Any) -> list[str]:
    items = source if isinstance(source, list) else [source]
    out = [str(item) for item in items if item]
    for item in out:
        if not item.startswith("salt://"):
            raise S.SourceError(f"Invalid source '{item}' (must be a salt:// URI)")
    return out


def plan(ctx: StateContext, name: str, sources: list[str], include_pat: Any, exclude_pat: Any, maxdepth: Any,
         include_empty: bool, merge: bool) -> tuple[dict[str, str], set[str]]:
    """({destination: salt:// source}, directories to manage) from the file server's listing."""
    if ctx.list_files is None:
        raise S.SourceError("Cannot list the file server's files: none is configured for this run")
    listings: dict[str, list[str]] = {}
    found: list[tuple[str, str, list[str]]] = []  # (env, prefix, listing) of the sources that exist
    for source in sources:
        plain, env = S._split_saltenv(source, ctx.saltenv)
        root = plain[len("salt://"):].strip("/")
        prefix = f"{root}/" if root else ""
        if env not in listings:
            listings[env] = list(ctx.list_files(env))
        if any(path.startswith(prefix) for path in listings[env]):
            found.append((env, prefix, listings[env]))
    if not found:
        raise S.SourceError("none of the specified sources were found")
    files: dict[str, str] = {}
    dirs: set[str] = set()
    for env, prefix, listing in found if merge else found[:1]:
        for path in sorted(listing):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix):]
            if not _selected(rel, include_pat, exclude_pat, maxdepth):
                continue
            dest = os.path.join(name, *rel.split("/"))
            if dest in files or any(str(parent) in files for parent in Path(dest).parents):
                continue
            url = f"salt://{path}?saltenv={env}"  # as Salt's salt.utils.url.create: templates see it
            files[dest] = url
            dirs.add(os.path.dirname(dest))
        if include_empty:
            for path in sorted({posixpath.dirname(p) for p in listing if p.startswith(prefix)}):
                rel = path[len(prefix):]
                if rel and _selected(rel, include_pat, exclude_pat, maxdepth):
                    dirs.add(os.path.join(name, *rel.split("/")))
    return files, dirs


def recurse(
    ctx: StateContext,
    name: str,
    source: Any,
    keep_source: bool = True,
    clean: bool = False,
    require: Any = None,
    user: Any = None,
    group: Any = None,
    dir_mode: Any = None,
    file_mode: Any = None,
    sym_mode: Any = None,
    template: Any = None,
    context: Any = None,
    replace: bool = True,
    defaults: Any = None,
    include_empty: bool = False,
    backup: Any = "",
    include_pat: Any = None,
    exclude_pat: Any = None,
    maxdepth: Any = None,
    keep_symlinks: bool = False,
    force_symlinks: bool = False,
    merge: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Copy the file server directory ``source`` to ``name`` (templates rendered), optionally cleaned."""
    name = os.path.expanduser(str(name))
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if "mode" in kwargs:
        return F.fail(ret, "'mode' is not allowed in 'file.recurse'. Please use 'file_mode' and 'dir_mode'.")
    if user is None and kwargs.get("owner") is not None:
        user = kwargs["owner"]
    keep_mode = isinstance(file_mode, str) and file_mode.lower() == "keep"
    dir_mode = F.normalize_mode(dir_mode)
    file_mode = None if keep_mode else F.normalize_mode(file_mode)
    owner_error = F.check_user_group(user, group)
    if owner_error and not ctx.test:
        return F.fail(ret, owner_error)
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    try:
        files, dirs = plan(ctx, name, _sources(source), include_pat, exclude_pat, maxdepth, bool(include_empty),
                           bool(merge))
    except S.SourceError as exc:
        return F.fail(ret, f"Recurse failed: {exc}")
    if not os.path.isdir(name):
        if os.path.exists(name):
            return F.fail(ret, f"The path {name} exists and is not a directory")
        if not ctx.test:
            F.make_dirs(name, dir_mode, user, group)

    comments: dict[str, list[str]] = {}

    def merge_ret(path: str, part: dict[str, Any]) -> None:
        if part["result"] is False or ret["result"] is True:
            ret["result"] = part["result"]
        if part["result"] is not True and part.get("comment"):
            comments.setdefault(path, []).append(str(part["comment"]))
        if part.get("changes"):
            ret["changes"][path] = part["changes"]

    for path in sorted(dirs, reverse=True):  # deepest first: a parent made on the way reports no change
        if clean and os.path.lexists(path) and not os.path.isdir(path):
            if ctx.test:
                merge_ret(path, {"result": None, "changes": {}, "comment": f"Replacing {path} with a directory"})
                continue
            F.remove_path(path)
            merge_ret(path, {"result": True, "changes": {"diff": "Replaced file with a directory"}, "comment": ""})
        merge_ret(path, _file_tree.directory(ctx, path, user=user, group=group, dir_mode=dir_mode,
                                             makedirs=True))
    passed = {k: v for k, v in kwargs.items() if k not in _NOT_PASSED}
    for dest, url in sorted(files.items()):
        if clean and replace and os.path.isdir(dest) and not os.path.islink(dest):
            if ctx.test:
                merge_ret(dest, {"result": None, "changes": {}, "comment": f"Replacing directory {dest} with a file"})
                continue
            F.remove_path(dest)
            merge_ret(dest, {"result": True, "changes": {"diff": "Replaced directory with a new file"},
                             "comment": ""})
        merge_ret(dest, _file_managed.managed(
            ctx, dest, source=url, user=user, group=group, mode="keep" if keep_mode else file_mode,
            template=template, makedirs=True, replace=replace, context=context, defaults=defaults, backup=backup,
            **passed))
    if clean:
        keep = set(files) | dirs | {name}
        keep |= _file_tree._keep_paths(ctx, name, require)
        removed = _clean(name, keep, exclude_pat, prune=not ctx.test)
        if removed:
            if ctx.test:
                if ret["result"]:
                    ret["result"] = None
                comments.setdefault("removed", []).extend(removed)
            else:
                for path in removed:
                    if os.path.lexists(path):
                        F.remove_path(path)
                ret["changes"]["removed"] = removed
    ret["comment"] = "\n".join(f"\n#### {path} ####\n" + "\n".join(texts) for path, texts in comments.items()).strip()
    if not ret["comment"]:
        ret["comment"] = f"Recursively updated {name}"
    if not ret["changes"] and ret["result"]:
        ret["comment"] = f"The directory {name} is in the correct state"
    return ret


def _clean(name: str, keep: set[str], exclude_pat: Any, prune: bool) -> list[str]:
    """Paths under ``name`` that are neither kept nor a parent of something kept (Salt's _clean_dir).
    ``prune``: do not list what is inside a directory that goes (a real run removes it first)."""
    real_keep = set()
    for path in keep:
        current = os.path.normpath(path)
        while current not in real_keep:
            real_keep.add(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    removed: list[str] = []
    if not os.path.isdir(name):
        return removed
    for root, dirs, files in os.walk(name, topdown=True):
        for entry in sorted(files + dirs):
            path = os.path.join(root, entry)
            if path in real_keep:
                continue
            if exclude_pat and _pattern_matches(os.path.relpath(path, name), str(exclude_pat)):
                continue
            removed.append(path)
            if prune and entry in dirs:
                dirs.remove(entry)
    return sorted(removed)
