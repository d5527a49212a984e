"""file.managed, file.serialize and file.copy: whole-file content management.

The changes each one reports follow Salt 3008 key for key (the conformance corpus compares
them): a new file reports ``diff: New file`` (plus ``mode`` when Salt's way of creating it
leaves a different mode to fix: a ``source`` file is born 0600, a ``contents`` file 0600
when a mode is given), an updated file its unified ``diff`` and any ``user``/``group``/
``mode`` it fixes; in test mode a missing file reports only ``newfile``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F
from runtime.states import _source as S
from runtime.states._textedit import text_list

if TYPE_CHECKING:
    from runtime.states import StateContext

_NOT_FOUND = object()


def _traverse(data: Any, key: str, delimiter: str = ":") -> Any:
    current = data
    for part in str(key).split(delimiter):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            return _NOT_FOUND
    return current


def _lookup_contents(source: Mapping[str, Any], keys: Any, what: str, delimiter: str) -> Any:
    if isinstance(keys, list):
        parts = []
        for key in keys:
            value = _traverse(source, key, delimiter)
            if value is _NOT_FOUND:
                raise S.SourceError(f"{what} {key} does not exist")
            parts.append(value if isinstance(value, str) else str(value))
        return os.linesep.join(parts)
    value = _traverse(source, keys, delimiter)
    if value is _NOT_FOUND:
        raise S.SourceError(f"{what} {keys} does not exist")
    return value


def normalize_contents(value: Any, newline: bool = True) -> str:
    """Salt: every line of every part ends with one newline; ``contents_newline: False`` drops the last."""
    out = []
    for part in text_list(value):
        for line in part.splitlines():
            out.append(line.rstrip("\n").rstrip("\r") + os.linesep)
    text = "".join(out)
    if not newline:
        text = text.rstrip("\n").rstrip("\r")
    return text


def _run_check_cmd(check_cmd: Any, data: bytes, name: str, ctx: StateContext) -> str | None:
    """Run ``check_cmd <tempfile>`` on the candidate content; an error comment when it fails."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=F.TEMP_PREFIX, suffix=".check")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        commands = check_cmd if isinstance(check_cmd, list) else [check_cmd]
        for command in commands:
            try:
                res = cmdrun.run(f"{command} {shlex.quote(tmp)}", grains=ctx.grains)
            except cmdrun.CommandError as exc:
                return f"check_cmd execution failed: {exc}"
            if res.retcode != 0:
                return f"check_cmd execution failed\n{res.stdout}\n{res.stderr}".rstrip()
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return None


def _desired_content(ctx: StateContext, name: str, source: Any, source_hash: Any, contents: Any,
                     contents_pillar: Any, contents_grains: Any, contents_newline: bool,
                     contents_delimiter: str, template: Any, context: Any, defaults: Any,
                     allow_empty: bool, skip_verify: bool, source_hash_name: str | None,
                     template_vars: Mapping[str, Any] | None = None,
                     ) -> tuple[bytes | None, str | None]:
    """(content, source mode) the file must have; content None when only metadata is managed.
    A source template also sees ``template_vars`` and ``source`` (the source used), as in Salt."""
    if contents_pillar is not None:
        raw = _lookup_contents(ctx.pillar, contents_pillar, "Pillar", contents_delimiter)
        label = f"contents_pillar {contents_pillar}"
    elif contents_grains is not None:
        raw = _lookup_contents(ctx.grains, contents_grains, "Grain", contents_delimiter)
        label = f"contents_grains {contents_grains}"
    elif contents is not None:
        raw, label = contents, "'contents'"
    else:
        raw, label = None, ""
    if raw is not None:
        if not allow_empty and not raw:
            raise S.SourceError(f"{label} value would result in empty contents. "
                                "Set allow_empty to True to allow the managed file to be empty.")
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                if template:
                    raise S.SourceError("Contents appear to be binary data and cannot be used "
                                        "as a template") from None
                return raw, None
        text = normalize_contents(raw, contents_newline)
        if template:
            text = S.render(ctx, text, template, context, defaults, name)
        return text.encode(), None
    if not source:
        return None, None
    fetched, hash_value = S.first_source(ctx, source, source_hash)
    scheme = S._scheme(fetched.url)
    wanted = S.expected_hash(ctx, hash_value, fetched.url, source_hash_name)
    if wanted is None and scheme in S.REMOTE_SCHEMES and not skip_verify:
        raise S.SourceError(f"Unable to verify upstream hash of source file {fetched.url}, "
                            "please set source_hash or set skip_verify to True")
    if wanted is not None and not skip_verify:
        S.verify(fetched.data, fetched.url, wanted)
    data = fetched.data
    if template:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise S.SourceError(f"Template {fetched.url} is not UTF-8 text") from None
        base = {"source": fetched.url, **(template_vars or {})}
        data = S.render(ctx, text, template, context, defaults, fetched.url, base).encode()
    return data, fetched.mode


def _perm_comment(ret: dict[str, Any], errors: list[str]) -> None:
    if errors:
        ret["result"] = False
        ret["comment"] = "; ".join(filter(None, [ret["comment"], *errors]))


def _owner_ids(user: Any, group: Any, existing: os.stat_result | None) -> tuple[int | None, int | None]:
    uid = F.resolve_uid(user)
    gid = F.resolve_gid(group)
    if existing is not None:
        uid = existing.st_uid if uid is None else uid
        gid = existing.st_gid if gid is None else gid
    return uid, gid


def manage_content(
    ctx: StateContext,
    ret: dict[str, Any],
    name: str,
    data: bytes | None,
    *,
    from_source: bool,
    user: Any = None,
    group: Any = None,
    mode: str | None = None,
    makedirs: bool = False,
    dir_mode: Any = None,
    backup: str = "",
    show_changes: bool = True,
    follow_symlinks: bool = True,
    check_cmd: Any = None,
) -> dict[str, Any]:
    """Bring ``name`` to ``data`` + owner + mode (real run; Salt's ``file.manage_file``)."""
    if os.path.isfile(name) or os.path.islink(name):
        real = os.path.realpath(name) if follow_symlinks and os.path.islink(name) else name
        replace_link = os.path.islink(name) and not follow_symlinks
        if data is None or not os.path.exists(real):
            current = b""
        else:
            current = F.read_bytes(real)  # through the link, also when the link is replaced
        if data is not None and (replace_link or current != data):
            if check_cmd:
                failure = _run_check_cmd(check_cmd, data, name, ctx)
                if failure:
                    return F.fail(ret, failure)
            if replace_link:
                ret["changes"]["diff"] = _link_diff(name, current, data, show_changes)
                st = None
                target = name
            else:
                ret["changes"]["diff"] = F.content_diff(current, data, show_changes)
                st = os.stat(real)
                target = real
            _backup(ctx, target, backup)
            file_mode = F.mode_bits(mode) if mode else (stat.S_IMODE(st.st_mode) if st else 0o666 & ~F.current_umask())
            uid, gid = _owner_ids(user, group, st)
            try:
                F.atomic_write(target, data, file_mode, uid, gid)
            except OSError as exc:
                ret["changes"] = {}
                return F.fail(ret, f"Failed to commit change: {exc.strerror or exc}")
            # what Salt's check_perms reports after its copy kept the old owner and mode
            if st is not None:
                if mode is not None and mode != F.normalize_mode(oct(stat.S_IMODE(st.st_mode))):
                    ret["changes"]["mode"] = mode
                if F._owner_differs(user, st.st_uid, F.user_name(st.st_uid), F.resolve_uid):
                    ret["changes"]["user"] = user
                if F._owner_differs(group, st.st_gid, F.group_name(st.st_gid), F.resolve_gid):
                    ret["changes"]["group"] = group
        else:
            changes, errors = F.apply_perms(name, user, group, mode, follow_symlinks)
            ret["changes"].update(changes)
            _perm_comment(ret, errors)
        if ret["result"] is not False:
            ret["comment"] = f"File {name} updated" if ret["changes"] else f"File {name} is in the correct state"
        return ret

    # new file
    parent = os.path.dirname(name)
    if not os.path.isdir(parent):
        if not makedirs:
            return F.fail(ret, "Parent directory not present")
        wanted_dir_mode = F.normalize_mode(dir_mode) if dir_mode is not None else F.dir_mode_for_file(mode)
        try:
            F.make_dirs(parent, wanted_dir_mode, user, group)
        except F.FileStateError as exc:
            return F.fail(ret, str(exc))
    if data is not None and check_cmd:
        failure = _run_check_cmd(check_cmd, data, name, ctx)
        if failure:
            return F.fail(ret, failure)
    default_mode = F.default_file_mode()
    final_mode = mode or default_mode
    # The mode Salt's way of creating the file leaves before its final chmod:
    # from a source a 0600 temp file is moved in; from contents the file is touched
    # under umask 077 when a mode is wanted.
    if from_source:
        born_mode = "0600"
    else:
        born_mode = "0600" if mode else default_mode
    uid, gid = _owner_ids(user, group, None)
    try:
        F.atomic_write(name, data or b"", F.mode_bits(final_mode), uid, gid)
    except OSError as exc:
        return F.fail(ret, f"Unable to create {name}: {exc.strerror or exc}")
    except F.FileStateError as exc:
        return F.fail(ret, str(exc))
    if data is None:
        ret["changes"]["new"] = f"file {name} created"
        ret["comment"] = "Empty file"
    else:
        ret["changes"]["diff"] = "New file"
    if final_mode != born_mode:
        ret["changes"]["mode"] = final_mode
    if user not in (None, "") and F.resolve_uid(user) != os.geteuid():
        ret["changes"]["user"] = user
    if group not in (None, "") and F.resolve_gid(group) != os.getegid():
        ret["changes"]["group"] = group
    if not ret["comment"]:
        ret["comment"] = f"File {name} updated"
    return ret


def _link_diff(name: str, current: bytes, data: bytes, show_changes: bool) -> str:
    """Salt diffs the link target's content against the new content; same content: a message."""
    if os.path.exists(name) and current != data:
        return F.content_diff(current, data, show_changes)
    return "Replace symbolic link with regular file"


def _backup(ctx: StateContext, path: str, backup: Any) -> None:
    mode = str(backup or ctx.opts.get("backup_mode") or "")
    if mode in ("minion", "both") and ctx.opts.get("cachedir") and os.path.exists(path):
        F.minion_backup(path, str(ctx.opts["cachedir"]))


def predict_changes(name: str, data: bytes | None, user: Any, group: Any, mode: str | None,
                    show_changes: bool = True, follow_symlinks: bool = True) -> dict[str, Any]:
    """Salt's ``check_file_meta``: the changes a real run would make (test mode)."""
    if not os.path.lexists(name) or (follow_symlinks and not os.path.exists(name)):
        return {"newfile": name}
    changes: dict[str, Any] = {}
    real = os.path.realpath(name) if follow_symlinks else name
    if data is not None:
        if os.path.islink(name) and not follow_symlinks:
            current = F.read_bytes(name) if os.path.exists(name) else b""
            changes["diff"] = _link_diff(name, current, data, show_changes)
        else:
            current = F.read_bytes(real)
            if current != data:
                changes["diff"] = F.content_diff(current, data, show_changes)
    changes.update(F.perm_changes(name, user, group, mode, follow_symlinks))
    return changes


def managed(
    ctx: StateContext,
    name: str,
    source: Any = None,
    source_hash: Any = "",
    source_hash_name: str | None = None,
    user: Any = None,
    group: Any = None,
    mode: Any = None,
    template: Any = None,
    makedirs: bool = False,
    dir_mode: Any = None,
    context: Any = None,
    replace: bool = True,
    defaults: Any = None,
    backup: Any = "",
    show_changes: bool = True,
    create: bool = True,
    contents: Any = None,
    contents_pillar: Any = None,
    contents_grains: Any = None,
    contents_newline: bool = True,
    contents_delimiter: str = ":",
    allow_empty: bool = True,
    follow_symlinks: bool = True,
    check_cmd: Any = None,
    skip_verify: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Manage a file's content (contents / contents_pillar / contents_grains / source), owner and mode."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Destination file name is required")
    if user is None and kwargs.get("owner") is not None:
        user = kwargs["owner"]
    keep_mode = isinstance(mode, str) and mode.lower() == "keep"
    mode = None if keep_mode else F.normalize_mode(mode)
    if mode is not None:
        try:
            F.mode_bits(mode)
        except F.FileStateError as exc:
            return F.fail(ret, str(exc))
    given = [x for x in (contents, contents_pillar, contents_grains) if x is not None]
    if source and given:
        return F.fail(ret, "'source' cannot be used in combination with 'contents', "
                           "'contents_pillar', or 'contents_grains'")
    if keep_mode and given:
        return F.fail(ret, "Mode preservation cannot be used in combination with 'contents', "
                           "'contents_pillar', or 'contents_grains'")
    if len(given) > 1:
        return F.fail(ret, "Only one of 'contents', 'contents_pillar', and 'contents_grains' is permitted")
    if "file_mode" in kwargs:
        ret.setdefault("warnings", []).append(
            "The 'file_mode' argument will be ignored.  Please use 'mode' instead to set file permissions.")
    if not source and not given:
        replace = False
    if not create and not os.path.isfile(name):
        ret["comment"] = f"File {name} is not present and is not set for creation"
        return ret
    owner_error = F.check_user_group(user, group)
    if owner_error and not ctx.test:
        return F.fail(ret, owner_error)
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    if os.path.isdir(name):
        return F.fail(ret, f"Specified target {name} is a directory")

    if not replace and os.path.exists(name):
        return _perms_only(ctx, ret, name, user, group, mode, follow_symlinks)

    try:
        data, source_mode = _desired_content(
            ctx, name, source, source_hash, contents, contents_pillar, contents_grains,
            contents_newline, contents_delimiter, template, context, defaults, allow_empty,
            skip_verify, source_hash_name,
            {"name": name, "user": user, "group": group, "mode": mode, "attrs": kwargs.get("attrs")})
    except (S.SourceError, F.FileStateError) as exc:
        prefix = "Unable to manage file: " if source and not ctx.test else ""
        return F.fail(ret, f"{prefix}{exc}")
    if keep_mode and source_mode is not None:
        mode = source_mode

    if ctx.test:
        ret["changes"] = predict_changes(name, data, user, group, mode, show_changes, follow_symlinks)
        if ret["changes"]:
            ret["result"] = None
            ret["comment"] = (f"The file {name} is set to be changed\n"
                              "Note: No changes made, actual changes may\nbe different due to other states.")
        else:
            ret["comment"] = f"The file {name} is in the correct state"
        return ret
    try:
        return manage_content(ctx, ret, name, data, from_source=bool(source), user=user, group=group,
                              mode=mode, makedirs=makedirs, dir_mode=dir_mode, backup=backup,
                              show_changes=show_changes, follow_symlinks=follow_symlinks,
                              check_cmd=check_cmd)
    except (OSError, F.FileStateError) as exc:
        ret["changes"] = {}
        return F.fail(ret, f"Unable to manage file: {exc}")


def _perms_only(ctx: StateContext, ret: dict[str, Any], name: str, user: Any, group: Any,
                mode: str | None, follow_symlinks: bool) -> dict[str, Any]:
    if ctx.test:
        ret["changes"] = F.perm_changes(name, user, group, mode, follow_symlinks)
        if ret["changes"]:
            ret["result"] = None
            current = F.stats(name, follow_symlinks)
            if "mode" in ret["changes"] and current is not None:
                ret["comment"] = (f"File {name} will be updated with permissions {mode} "
                                  f"from its current state of {current.mode}")
            else:
                ret["comment"] = f"File {name} not updated"
        else:
            ret["comment"] = f"File {name} not updated"
        return ret
    changes, errors = F.apply_perms(name, user, group, mode, follow_symlinks)
    ret["changes"].update(changes)
    _perm_comment(ret, errors)
    if not ret["changes"] and ret["result"]:
        ret["comment"] = f"File {name} exists with proper permissions. No changes made."
    elif ret["result"]:
        ret["comment"] = f"File {name} updated"
    return ret


# ---------------------------------------------------------------------------
# serialize


def _serialize(dataset: Any, formatter: str, options: Mapping[str, Any]) -> str:
    if formatter == "json":
        opts: dict[str, Any] = {"indent": 2, "separators": (",", ": "), "sort_keys": True, "ensure_ascii": False}
        opts.update(options)
        if isinstance(opts.get("separators"), list):
            opts["separators"] = tuple(opts["separators"])
        return json.dumps(dataset, **opts)
    if formatter == "yaml":
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        opts = {"default_flow_style": False}  # (the same dict type as json's)
        opts.update(options)
        text = yaml.dump(dataset, Dumper=dumper, **opts)
        if text.endswith("\n...\n"):
            return text[:-5]
        return text[:-1] if text.endswith("\n") else text
    raise S.SourceError(f"The {formatter} serializer could not be found. "
                        "It either does not exist or its prerequisites are not installed.")


def _deserialize(text: str, formatter: str) -> Any:
    if formatter == "json":
        return json.loads(text)
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - safe loader


def _merge_recurse(old: Any, new: Any) -> Any:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out = dict(old)
        for key, value in new.items():
            out[key] = _merge_recurse(out[key], value) if key in out else value
        return out
    return new


def recursive_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Salt's dictdiffer.recursive_diff: {key: {new, old}} for changed keys ('<_null_>' = absent)."""
    out: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            out[key] = {"new": value, "old": "<_null_>"}
        elif value != old[key]:
            if isinstance(value, Mapping) and isinstance(old[key], Mapping):
                sub = recursive_diff(old[key], value)
                if sub:
                    out[key] = sub
            else:
                out[key] = {"new": value, "old": old[key]}
    return out


def _repack(options: Any) -> dict[str, Any]:
    if isinstance(options, Mapping):
        return dict(options)
    out: dict[str, Any] = {}
    for item in options or []:
        if isinstance(item, Mapping):
            out.update(item)
    return out


def serialize(
    ctx: StateContext,
    name: str,
    dataset: Any = None,
    dataset_pillar: Any = None,
    user: Any = None,
    group: Any = None,
    mode: Any = None,
    backup: Any = "",
    makedirs: bool = False,
    show_changes: bool = True,
    create: bool = True,
    merge_if_exists: bool = False,
    serializer: Any = None,
    serializer_opts: Any = None,
    check_cmd: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Write ``dataset`` (or the pillar value ``dataset_pillar``) as JSON or YAML."""
    name = os.path.expanduser(str(name)) if name else ""
    ret = F.new_ret(name)
    if not name:
        return F.fail(ret, "Must provide name to file.serialize")
    if not create and not os.path.isfile(name):
        ret["comment"] = f"File {name} is not present and is not set for creation"
        return ret
    formatter = kwargs.get("formatter")
    if serializer and formatter:
        return F.fail(ret, "Only one of serializer and formatter are allowed")
    fmt = str(serializer or formatter or "yaml").lower()
    if dataset and dataset_pillar:
        return F.fail(ret, "Only one of 'dataset' and 'dataset_pillar' is permitted")
    if dataset_pillar:
        dataset = _traverse(ctx.pillar, dataset_pillar)
        if dataset is _NOT_FOUND:
            dataset = None
    if dataset is None:
        return F.fail(ret, "Neither 'dataset' nor 'dataset_pillar' was defined")
    if fmt not in ("json", "yaml"):
        return F.fail(ret, f"The {fmt} serializer could not be found. It either does not exist or "
                           "its prerequisites are not installed.")
    existing = None
    if merge_if_exists and os.path.isfile(name):
        try:
            existing = _deserialize(F.read_bytes(name).decode("utf-8"), fmt)
        except (ValueError, UnicodeDecodeError, Exception) as exc:  # noqa: BLE001 - yaml errors too
            return F.fail(ret, f"Failed to deserialize existing data: {exc}")
        if existing is not None:
            merged = _merge_recurse(existing, dataset)
            if merged == existing:
                ret["comment"] = f"The file {name} is in the correct state"
                return ret
            dataset = merged
    try:
        text = _serialize(dataset, fmt, _repack(serializer_opts)) + "\n"
    except (TypeError, ValueError, S.SourceError) as exc:
        return F.fail(ret, f"Failed to serialize dataset: {exc}")
    mode = F.normalize_mode(mode)
    data = text.encode()
    if ctx.test:
        ret["changes"] = predict_changes(name, data, user, group, mode, show_changes)
        if ret["changes"]:
            ret["result"] = None
            ret["comment"] = f"Dataset will be serialized and stored into {name}"
        else:
            ret["comment"] = f"The file {name} is in the correct state"
    else:
        owner_error = F.check_user_group(user, group)
        if owner_error:
            return F.fail(ret, owner_error)
        try:
            ret = manage_content(ctx, ret, name, data, from_source=False, user=user, group=group, mode=mode,
                                 makedirs=makedirs, backup=backup, show_changes=show_changes,
                                 check_cmd=check_cmd)
        except (OSError, F.FileStateError) as exc:
            ret["changes"] = {}
            return F.fail(ret, f"Unable to manage file: {exc}")
    if isinstance(existing, Mapping) and isinstance(dataset, Mapping):
        # Salt reports a merge as the data difference, not as a text diff
        ret["changes"]["diff"] = recursive_diff(existing, dataset)
    return ret


# ---------------------------------------------------------------------------
# copy


def copy(
    ctx: StateContext,
    name: str,
    source: str,
    force: bool = False,
    makedirs: bool = False,
    preserve: bool = False,
    user: Any = None,
    group: Any = None,
    mode: Any = None,
    dir_mode: Any = None,
    subdir: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Copy the local file or tree ``source`` to ``name`` (when missing, or always with ``force``)."""
    name = os.path.expanduser(str(name)) if name else ""
    source = os.path.expanduser(str(source or ""))
    ret = F.new_ret(name)
    ret["comment"] = f'Copied "{source}" to "{name}"'
    if not name:
        return F.fail(ret, "Must provide name to file.copy")
    if not os.path.isabs(name):
        return F.fail(ret, f"Specified file {name} is not an absolute path")
    if not os.path.exists(source):
        return F.fail(ret, f'Source file "{source}" is not present')
    src_stat = os.stat(source)
    if preserve:
        uid, gid = src_stat.st_uid, src_stat.st_gid
        mode = F.normalize_mode(oct(stat.S_IMODE(src_stat.st_mode)))
    else:
        if user is None and kwargs.get("owner") is not None:
            user = kwargs["owner"]
        owner_error = F.check_user_group(user, group)
        if owner_error:
            return F.fail(ret, owner_error)
        resolved = F.resolve_uid(user) if user not in (None, "") else os.geteuid()
        assert resolved is not None   # check_user_group found it
        uid = resolved
        named_gid = F.resolve_gid(group) if group not in (None, "") else _primary_gid(uid)
        assert named_gid is not None
        gid = named_gid
        mode = F.normalize_mode(mode) or F.normalize_mode(oct(stat.S_IMODE(src_stat.st_mode)))
    if os.path.isdir(name) and subdir:
        name = os.path.join(name, os.path.basename(source))
        ret["name"] = name
    exists = os.path.lexists(name)
    if exists and not force:
        ret["comment"] = f'The target file "{name}" exists and will not be overwritten'
        return ret
    if exists and os.path.isfile(name) and F.read_bytes(name) == F.read_bytes(source):
        ret["comment"] += " - files are identical but force flag is set"
    if ctx.test:
        ret["comment"] = f'File "{source}" is set to be copied to "{name}"'
        ret["result"] = None
        return ret
    parent = os.path.dirname(name)
    if not os.path.isdir(parent):
        if not makedirs:
            return F.fail(ret, f"The target directory {parent} is not present")
        wanted = F.normalize_mode(dir_mode) if dir_mode is not None else F.dir_mode_for_file(mode)
        try:
            F.make_dirs(parent, wanted, uid, gid)
        except F.FileStateError as exc:
            return F.fail(ret, str(exc))
    try:
        if os.path.isdir(source):
            if exists:
                F.remove_path(name)
            shutil.copytree(source, name, symlinks=True)
            for root, dirs, files in os.walk(name):
                for entry in dirs + files:
                    os.lchown(os.path.join(root, entry), uid, gid)
            os.chown(name, uid, gid)
            if mode:
                os.chmod(name, F.mode_bits(mode))
        else:
            if exists and (os.path.isdir(name) and not os.path.islink(name)):
                F.remove_path(name)
            F.atomic_write(name, F.read_bytes(source), F.mode_bits(mode), uid, gid)
            if preserve:
                os.utime(name, ns=(src_stat.st_atime_ns, src_stat.st_mtime_ns))
    except (OSError, F.FileStateError):
        return F.fail(ret, f'Failed to copy "{source}" to "{name}"')
    ret["changes"] = {name: source}
    return ret


def _primary_gid(uid: int) -> int:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return os.getegid()
