"""file.directory, file.absent, file.symlink, file.touch, file.exists, file.missing."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F

if TYPE_CHECKING:
    from runtime.states import StateContext

_RECURSE_TYPES = ("user", "group", "mode", "ignore_files", "ignore_dirs", "silent")


# ---------------------------------------------------------------------------
# absent / exists / missing


def absent(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Make sure a file, symlink or directory (recursively) is not there."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.absent")
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    if os.path.normpath(name) == "/":
        return F.fail(ret, 'Refusing to make "/" absent')
    is_file = os.path.isfile(name) or os.path.islink(name)
    if not is_file and not os.path.isdir(name):
        ret["comment"] = f"File {name} is not present"
        return ret
    kind = "File" if is_file else "Directory"
    if ctx.test:
        ret["result"] = None
        ret["changes"]["removed"] = name
        ret["comment"] = f"{kind} {name} is set for removal"
        return ret
    try:
        F.remove_path(name)
    except OSError as exc:
        return F.fail(ret, f"Failed to remove {kind.lower()} {name}: {exc.strerror or exc}")
    ret["comment"] = f"Removed {kind.lower()} {name}"
    ret["changes"]["removed"] = name
    return ret


def exists(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Fail unless the path exists (nothing is changed)."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.exists")
    if not os.path.exists(name):
        return F.fail(ret, f"Specified path {name} does not exist")
    ret["comment"] = f"Path {name} exists"
    return ret


def missing(ctx: StateContext, name: str, **kwargs: Any) -> dict[str, Any]:
    """Fail if the path exists (nothing is changed)."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.missing")
    if os.path.exists(name):
        return F.fail(ret, f"Specified path {name} exists")
    ret["comment"] = f"Path {name} is missing"
    return ret


# ---------------------------------------------------------------------------
# touch


def _touch_times(atime: Any, mtime: Any) -> tuple[float, float] | None:
    if atime is None and mtime is None:
        return None
    now = time.time()
    a = float(atime) if atime is not None else (float(mtime) if mtime is not None else now)
    m = float(mtime) if mtime is not None else a
    return a, m


def touch(ctx: StateContext, name: str, atime: Any = None, mtime: Any = None, makedirs: bool = False,
          **kwargs: Any) -> dict[str, Any]:
    """Create an empty file, or update the times of an existing one."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.touch")
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    if ctx.test:
        if not os.path.exists(name):
            ret.update(result=None, comment=f"File {name} is set to be created", changes={"new": name})
            return ret
        st = os.lstat(name)
        if (atime is not None and str(atime) != str(st.st_atime)) or (
                mtime is not None and str(mtime) != str(st.st_mtime)):
            ret.update(result=None, comment=f"Times set to be updated on file {name}", changes={"touched": name})
        else:
            ret["comment"] = f"File {name} exists and has the correct times"
        return ret
    parent = os.path.dirname(name)
    if makedirs and not os.path.isdir(parent):
        try:
            F.make_dirs(parent)
        except F.FileStateError as exc:
            return F.fail(ret, str(exc))
    if not os.path.isdir(parent):
        return F.fail(ret, f"Directory not present to touch file {name}")
    extant = os.path.exists(name)
    try:
        times = _touch_times(atime, mtime)
        if not extant:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.close(fd)
        os.utime(name, times)
    except (OSError, ValueError) as exc:
        return F.fail(ret, f"Unable to touch {name}: {exc}")
    if not extant:
        ret["comment"] = f"Created empty file {name}"
        ret["changes"]["new"] = name
    else:
        kind = "directory" if os.path.isdir(name) else "file"
        ret["comment"] = f"Updated times on {kind} {name}"
        ret["changes"]["touched"] = name
    return ret


# ---------------------------------------------------------------------------
# directory


def _recurse_set(recurse: Any) -> set[str]:
    if not recurse:
        return set()
    if not isinstance(recurse, list):
        raise ValueError('"recurse" must be formed as a list of strings')
    try:
        out = set(recurse)
    except TypeError:
        out = None
    if out is None or not set(_RECURSE_TYPES) >= out:
        raise ValueError('Types for "recurse" limited to ' + ", ".join(f'"{t}"' for t in _RECURSE_TYPES) + ".")
    if "ignore_files" in out and "ignore_dirs" in out:
        raise ValueError('Must not specify "recurse" options "ignore_files" and "ignore_dirs" at the same time.')
    return out


def _walk(top: str, max_depth: int | None = None) -> list[tuple[str, list[str], list[str]]]:
    base = top.rstrip(os.sep).count(os.sep)
    out = []
    for root, dirs, files in os.walk(top):
        if max_depth is not None and root.rstrip(os.sep).count(os.sep) - base >= max_depth:
            dirs.clear()
            continue
        out.append((root, sorted(dirs), sorted(files)))
    return out


def _excluded(relpath: str, exclude_pat: Any) -> bool:
    if not exclude_pat:
        return False
    patterns = exclude_pat if isinstance(exclude_pat, list) else [exclude_pat]
    for pattern in patterns:
        pattern = str(pattern)
        if pattern.startswith("E@"):
            if re.search(pattern[2:], relpath):
                return True
        elif fnmatch.fnmatch(relpath, pattern):
            return True
    return False


def _dir_meta(path: str, user: Any, group: Any, mode: str | None, follow_symlinks: bool) -> dict[str, Any]:
    if F.stats(path, follow_symlinks) is None:
        return {"directory": "new"}
    return F.perm_changes(path, user, group, mode, follow_symlinks)


def _keep_paths(ctx: StateContext, name: str, require: Any) -> set[str]:
    """Files a ``clean`` must keep: the names of required file states (Salt's _gen_keep_files)."""
    keep: set[str] = set()
    if not isinstance(require, list):
        return keep
    refs = [entry["file"] for entry in require if isinstance(entry, Mapping) and "file" in entry]
    for ref in refs:
        for low in ctx.lowstate:
            if low.get("state") != "file" or ref not in (low.get("name"), low.get("__id__")):
                continue
            path = str(low.get("name"))
            if os.path.isdir(path):
                rel = os.path.relpath(os.path.abspath(path), os.path.abspath(name))
                if not rel.startswith(os.pardir):
                    keep.add(path)
                    for root, dirs, files in os.walk(path):
                        keep.update(os.path.join(root, entry) for entry in dirs + files)
            else:
                keep.add(path)
    return keep


def _clean_targets(ctx: StateContext, name: str, require: Any, exclude_pat: Any,
                   walked: list[tuple[str, list[str], list[str]]]) -> list[str]:
    keep = _keep_paths(ctx, name, require)
    real_keep = {os.path.normcase(name)}
    for path in keep:
        current = os.path.normcase(os.path.abspath(path))
        real_keep.add(current)
        while True:
            current = os.path.dirname(current)
            real_keep.add(current)
            if current in ("/", ""):
                break
    out = []
    for root, dirs, files in walked:
        for entry in dirs + files:
            path = os.path.join(root, entry)
            if os.path.normcase(path) in real_keep:
                continue
            if _excluded(os.path.relpath(path, name), exclude_pat):
                continue
            out.append(path)
    return out


def _check_directory(ctx: StateContext, name: str, user: Any, group: Any, recurse: set[str],
                     dir_mode: str | None, file_mode: str | None, clean: bool, require: Any,
                     exclude_pat: Any, max_depth: int | None, follow_symlinks: bool,
                     children_only: bool) -> dict[str, Any]:
    """Salt's ``_check_directory``: what a real run would change, keyed by path."""
    changes: dict[str, Any] = {}
    walked = _walk(name, max_depth) if (recurse or clean) and os.path.isdir(name) else []
    if recurse:
        r_user = user if "user" in recurse else None
        r_group = group if "group" in recurse else None
        r_dir_mode = dir_mode if "mode" in recurse else None
        r_file_mode = file_mode if "mode" in recurse else None
        for root, dirs, files in walked:
            if "ignore_files" not in recurse:
                for fname in files:
                    path = os.path.join(root, fname)
                    fchange = F.perm_changes(path, r_user, r_group, r_file_mode, follow_symlinks)
                    if fchange:
                        changes[path] = fchange
            if "ignore_dirs" not in recurse:
                for dname in dirs:
                    path = os.path.join(root, dname)
                    fchange = _dir_meta(path, r_user, r_group, r_dir_mode, follow_symlinks)
                    if fchange:
                        changes[path] = fchange
    if not children_only:
        fchange = _dir_meta(name, user, group, dir_mode, follow_symlinks)
        if fchange:
            changes[name] = fchange
    if clean:
        for path in _clean_targets(ctx, name, require, exclude_pat, walked):
            changes[path] = {"removed": "Removed due to clean"}
    if not os.path.isdir(name):
        changes[name] = {"directory": "new"}
    return changes


def directory(
    ctx: StateContext,
    name: str,
    user: Any = None,
    group: Any = None,
    recurse: Any = None,
    max_depth: Any = None,
    dir_mode: Any = None,
    file_mode: Any = None,
    makedirs: bool = False,
    clean: bool = False,
    require: Any = None,
    exclude_pat: Any = None,
    follow_symlinks: bool = False,
    force: bool = False,
    backupname: str | None = None,
    allow_symlink: bool = True,
    children_only: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Make sure a directory exists with the given owner and mode (optionally recursively, cleaned)."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.directory")
    if name != "/" and name.endswith("/"):
        name = name.rstrip("/") or "/"
        ret["name"] = name
    if max_depth is not None and clean:
        return F.fail(ret, "Cannot specify both max_depth and clean")
    if user is None and kwargs.get("owner") is not None:
        user = kwargs["owner"]
    if "mode" in kwargs and not dir_mode:
        dir_mode = kwargs["mode"]
    if not file_mode:
        file_mode = dir_mode
    dir_mode = F.normalize_mode(dir_mode)
    file_mode = F.normalize_mode(file_mode)
    try:
        for value in (dir_mode, file_mode):
            if value is not None:
                F.mode_bits(value)
    except F.FileStateError as exc:
        return F.fail(ret, str(exc))
    if require is None:
        require = ctx.low.get("require")
    owner_error = F.check_user_group(user, group)
    if owner_error and not ctx.test:
        return F.fail(ret, owner_error)
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    try:
        recurse_set = _recurse_set(recurse)
    except ValueError as exc:
        return F.fail(ret, str(exc))
    depth = int(max_depth) if max_depth is not None else None

    in_the_way = os.path.isfile(name) or (not allow_symlink and os.path.islink(name)) or (
        force and os.path.islink(name))
    if in_the_way:
        if backupname is not None:
            if os.path.lexists(backupname):
                if not force:
                    return F.fail(ret, f"File exists where the backup target {backupname} should go")
                if ctx.test:
                    ret["changes"]["forced"] = f"Existing file at backup path {backupname} would be removed"
                else:
                    F.remove_path(backupname)
            if ctx.test:
                ret["changes"]["backup"] = f"{name} would be renamed to {backupname}"
                ret["changes"][name] = {"directory": "new"}
                ret["comment"] = f"{name} would be backed up and replaced with a new directory"
                ret["result"] = None
                return ret
            os.rename(name, backupname)
        elif force:
            kind = "File" if os.path.isfile(name) and not os.path.islink(name) else "Symlink"
            if ctx.test:
                ret["changes"]["forced"] = f"{kind} would be forcibly replaced"
            else:
                F.remove_path(name)
                ret["changes"]["forced"] = f"{kind} was forcibly replaced"
        elif os.path.isfile(name) and not os.path.islink(name):
            return F.fail(ret, f"Specified location {name} exists and is a file")
        else:
            return F.fail(ret, f"Specified location {name} exists and is a symlink")

    tchanges = _check_directory(ctx, name, user, group, recurse_set, dir_mode, file_mode, clean, require,
                                exclude_pat, depth, follow_symlinks, children_only)
    ret["changes"].update(tchanges)
    if ctx.test:
        if tchanges:
            ret["result"] = None
            lines = ["The following files will be changed:\n"]
            lines.extend(f"{path}: {key} - {val}\n" for path, change in tchanges.items()
                         for key, val in change.items())
            ret["comment"] = "".join(lines)
        else:
            ret["comment"] = f"The directory {name} is in the correct state"
        return ret
    if not ret["changes"]:
        ret["comment"] = f"The directory {name} is in the correct state"
        return ret

    if not os.path.isdir(name):
        parent = os.path.dirname(name)
        if not os.path.isdir(parent) and not makedirs:
            return F.fail(ret, f"No directory to create {name} in")
        try:
            F.make_dirs(name, dir_mode, user, group)
        except F.FileStateError as exc:
            return F.fail(ret, str(exc))
        ret["changes"][name] = {"directory": "new"}
        ret["comment"] = f"Directory {name} updated"
        return ret

    errors: list[str] = []
    if not children_only:
        changes, errs = F.apply_perms(name, user, group, dir_mode, follow_symlinks)
        ret["changes"].update(changes)
        errors.extend(errs)
    if recurse_set:
        r_user = user if "user" in recurse_set else None
        r_group = group if "group" in recurse_set else None
        if "user" in recurse_set and user in (None, ""):
            ret["result"] = False
            ret["comment"] = "user not specified, but configured as a target for recursive ownership management"
        if "group" in recurse_set and group in (None, ""):
            ret["result"] = False
            ret["comment"] = "group not specified, but configured as a target for recursive ownership management"
        r_file_mode = file_mode if "mode" in recurse_set else None
        r_dir_mode = dir_mode if "mode" in recurse_set else None
        for root, dirs, files in _walk(name, depth):
            if "ignore_files" not in recurse_set:
                for fname in files:
                    changes, errs = F.apply_perms(os.path.join(root, fname), r_user, r_group, r_file_mode,
                                                  follow_symlinks)
                    ret["changes"].update(changes)
                    errors.extend(errs)
            if "ignore_dirs" not in recurse_set:
                for dname in dirs:
                    changes, errs = F.apply_perms(os.path.join(root, dname), r_user, r_group, r_dir_mode,
                                                  follow_symlinks)
                    ret["changes"].update(changes)
                    errors.extend(errs)
        if "silent" in recurse_set:
            ret["changes"] = {"recursion": "Changes silenced"}
    if clean:
        removed = []
        for path in _clean_targets(ctx, name, require, exclude_pat, _walk(name)):
            if os.path.lexists(path):
                try:
                    F.remove_path(path)
                except OSError as exc:
                    errors.append(f"Unable to remove {path}: {exc.strerror}")
                    continue
                removed.append(path)
        if removed:
            ret["changes"]["removed"] = removed
            ret["comment"] = f"Files cleaned from directory {name}"
    if not ret["comment"]:
        if children_only:
            ret["comment"] = f"Directory {name}/* updated"
        elif ret["changes"]:
            ret["comment"] = f"Directory {name} updated"
    if not ret["changes"] and ret["result"]:
        extra = ret["comment"]
        ret["comment"] = f"Directory {name} is in the correct state" + (f"\n{extra}" if extra else "")
    if errors:
        ret["result"] = False
        ret["comment"] += "\n\nThe following errors were encountered:\n" + "".join(f"\n- {e}" for e in errors)
    return ret


# ---------------------------------------------------------------------------
# symlink


def _link_owner(path: str) -> tuple[str, str]:
    st = os.lstat(path)
    return F.user_name(st.st_uid), F.group_name(st.st_gid)



def _lchown(name: str, user: Any, group: Any) -> None:
    """Own the link itself; an owner or group that names nobody is left as it is (-1)."""
    uid, gid = F.resolve_uid(user), F.resolve_gid(group)
    os.lchown(name, -1 if uid is None else uid, -1 if gid is None else gid)


def _owner_ok(path: str, user: str, group: str) -> bool:
    st = os.lstat(path)
    return st.st_uid == F.resolve_uid(user) and st.st_gid == F.resolve_gid(group)


def _make_link(target: str, name: str) -> None:
    """Create (or atomically replace) the symlink ``name`` -> ``target``."""
    if not os.path.lexists(name):
        os.symlink(target, name)
        return
    dirname = os.path.dirname(name)
    for attempt in range(100):
        tmp = os.path.join(dirname, f"{F.TEMP_PREFIX}{os.getpid()}-{attempt}.link")
        try:
            os.symlink(target, tmp)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"Unable to create a temporary link in {dirname}")
    try:
        os.replace(tmp, name)
    except OSError:
        os.unlink(tmp)
        raise


def symlink(
    ctx: StateContext,
    name: str,
    target: str,
    force: bool = False,
    backupname: str | None = None,
    makedirs: bool = False,
    user: Any = None,
    group: Any = None,
    mode: Any = None,
    atomic: bool = False,
    inherit_user_and_group: bool = False,
    follow_symlinks: bool = True,
    **kwargs: Any,
) -> dict[str, Any]:
    """Make sure ``name`` is a symlink to ``target`` (owned by user:group)."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.symlink")
    target = str(target)
    path_exists = os.path.exists if follow_symlinks else os.path.lexists
    mode = F.normalize_mode(mode)
    if user is None and kwargs.get("owner") is not None:
        user = kwargs["owner"]
    if inherit_user_and_group and (user is None or group is None) and os.path.islink(name):
        cur_user, cur_group = _link_owner(name)
        user = cur_user if user is None else user
        group = cur_group if group is None else group
    if user is None:
        user = ctx.opts.get("user") or F.user_name(os.geteuid())
    if group is None:
        import pwd

        try:
            group = F.group_name(pwd.getpwnam(str(user)).pw_gid)
        except KeyError:
            group = user
    errors = []
    if F.resolve_uid(user) is None:
        errors.append(f"User {user} does not exist")
    if F.resolve_gid(group) is None:
        errors.append(f"Group {group} does not exist")
    if not os.path.isabs(name):
        errors.append(f"Specified file {name} is not an absolute path")
    if errors:
        return F.fail(ret, ". ".join(errors) + ("." if len(errors) > 1 else ""))
    user, group = str(user), str(group)

    # what would change
    if not path_exists(name) and not os.path.islink(name):
        tresult, tcomment, tchanges = None, f"Symlink {name} to {target} is set for creation", {"new": name}
    elif os.path.islink(name):
        if os.readlink(name) != target:
            tresult, tcomment, tchanges = None, f"Link {name} target is set to be changed to {target}", {
                "change": name}
        elif not _owner_ok(name, user, group):
            cur = _link_owner(name)
            tresult, tchanges = None, {"ownership": f"{cur[0]}:{cur[1]}"}
            tcomment = (f"The symlink {name} is present, but the ownership of the symlink would be changed "
                        f"from {cur[0]}:{cur[1]} to {user}:{group}")
        else:
            tresult, tcomment, tchanges = True, f"The symlink {name} is present", {}
    elif force:
        tresult, tchanges = None, {}
        tcomment = f"The file or directory {name} is set for removal to make way for a new symlink targeting {target}"
    else:
        tresult, tchanges = False, {}
        tcomment = f"File or directory exists where the symlink {name} should be. Did you mean to use force?"

    parent = os.path.dirname(name)
    if not os.path.isdir(parent):
        if makedirs:
            if ctx.test:
                tcomment += f"\n{parent} will be created"
            else:
                try:
                    F.make_dirs(parent, mode, user, group)
                except F.FileStateError as exc:
                    return F.fail(ret, str(exc))
        elif ctx.test:
            tcomment += f"\nDirectory {parent} for symlink is not present"
        else:
            return F.fail(ret, f"Directory {parent} for symlink is not present")
    if ctx.test:
        ret.update(result=tresult, comment=tcomment, changes=tchanges)
        return ret

    if os.path.islink(name):
        if os.path.normpath(os.readlink(name)) == os.path.normpath(target):
            if _owner_ok(name, user, group):
                ret["comment"] = f"Symlink {name} is present and owned by {user}:{group}"
                return ret
            try:
                _lchown(name, user, group)
            except OSError:
                pass
            if _owner_ok(name, user, group):
                ret["comment"] = f"Set ownership of symlink {name} to {user}:{group}"
                ret["changes"]["ownership"] = f"{user}:{group}"
            else:
                ret["result"] = False
                ret["comment"] = f"Failed to set ownership of symlink {name} to {user}:{group}"
            return ret
    elif path_exists(name) or os.path.lexists(name):
        if backupname is not None:
            if not os.path.isabs(backupname):
                if backupname != os.path.basename(backupname):
                    return F.fail(ret, f"Backupname must be an absolute path or a file name: {backupname}")
                backupname = os.path.join(os.path.dirname(os.path.normpath(name)), backupname)
            if os.path.lexists(backupname):
                if not force:
                    return F.fail(ret, f"Symlink & backup dest exists and Force not set. {name} -> {target} - "
                                       f"backup: {backupname}")
                F.remove_path(backupname)
            try:
                shutil.move(name, backupname)
            except OSError as exc:
                return F.fail(ret, f"Unable to rename {name} to backup {backupname} -> : {exc}")
        elif force:
            try:
                F.remove_path(name)
            except OSError as exc:
                return F.fail(ret, f"Unable to remove {name} to make way for the symlink: {exc.strerror}")
        elif not atomic:
            kind = "File" if os.path.isfile(name) else "Directory" if os.path.isdir(name) else "File system entry"
            return F.fail(ret, f"{kind} exists where the symlink {name} should be")
    try:
        _make_link(target, name)
    except OSError as exc:
        return F.fail(ret, f"Unable to create new symlink {name} -> {target}: {exc}")
    ret["comment"] = f"Created new symlink {name} -> {target}"
    ret["changes"]["new"] = name
    if not _owner_ok(name, user, group):
        try:
            _lchown(name, user, group)
        except OSError:
            pass
        if not _owner_ok(name, user, group):
            ret["result"] = False
            ret["comment"] += f", but was unable to set ownership to {user}:{group}"
    return ret
