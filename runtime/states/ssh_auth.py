"""The ``ssh_auth`` state module: keys in a user's ``authorized_keys`` (present, absent, manage).

As Salt 3008's: ``name`` is a key (or a whole ``[options] enc key comment`` line), or with
``source`` a file of keys on the file server; ``config`` is relative to the user's home
(``%h``, ``%u`` expanded). A key is identified by its base64 body; the same key with another
type, comment or options is updated in place. A new file is 0600 in a 0700 ``.ssh`` directory,
both owned by the user. Writes are atomic.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from runtime.states import _files as F
from runtime.states import _source
from runtime.states import _ssh_keys as K

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "manage", "present"]

DEFAULT_CONFIG = ".ssh/authorized_keys"


def _current(user: str, config: str, hash_type: str | None) -> dict[str, K.KeyLine]:
    try:
        path = K.config_path(user, config)
    except K.KeyError_:
        return {}
    return K.parse_keys(K.read_text(path), hash_type) if os.path.isfile(path) else {}


def _status(user: str, wanted: K.KeyLine, config: str, hash_type: str | None) -> str:
    """Salt's check_key: "add", "update" or "exists"."""
    current = _current(user, config, hash_type).get(wanted.key)
    if current is None:
        return "add"
    return "exists" if current.line() == wanted.line() else "update"


def _source_keys(ctx: StateContext, source: str, hash_type: str | None) -> dict[str, K.KeyLine] | None:
    """Keys of a key file on the file server (None when the file is missing)."""
    fetched = _source.fetch(ctx, source)
    if fetched is None:
        return None
    return K.parse_keys(fetched.data.decode("utf-8", errors="replace"), hash_type)


def _write(path: str, lines: list[str], user: str) -> None:
    data = "".join(lines).encode()
    if os.path.exists(path):
        F.write_preserving(path, data)
        return
    info = K.user_info(user)
    assert info is not None
    F.atomic_write(path, data, 0o600, info.pw_uid if os.geteuid() == 0 else None,
                   info.pw_gid if os.geteuid() == 0 else None)


def _set_key(user: str, wanted: K.KeyLine, config: str, hash_type: str | None) -> str:
    """Salt's set_auth_key: "new", "replace", "no change", "fail" or "invalid"."""
    if len(wanted.key.split()) > 1:
        return "invalid"
    info = K.user_info(user)
    if info is None:
        return "fail"
    if K.fingerprint(wanted.key, hash_type) is None:
        return "invalid"
    status = _status(user, wanted, config, hash_type)
    if status == "exists":
        return "no change"
    path = K.config_path(user, config)
    if status == "update":
        lines = []
        for raw in K.read_text(path).splitlines():
            parsed = K.parse_line(raw)
            if not raw.strip():
                continue
            lines.append(wanted.line() if parsed is not None and parsed.key == wanted.key else raw.strip() + "\n")
        _write(path, lines, user)
        return "replace"
    if path.startswith(info.pw_dir) and not os.path.isdir(info.pw_dir):
        return "fail"
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
        if os.geteuid() == 0:
            os.chown(directory, info.pw_uid, info.pw_gid)
        os.chmod(directory, 0o700)
    text = K.read_text(path)
    if text and not text.endswith("\n"):
        text += "\n"
    _write(path, [text, wanted.line()], user)
    return "new"


def _remove_key(user: str, key: str, config: str, hash_type: str | None) -> str:
    if key not in _current(user, config, hash_type):
        return "Key not present"
    path = K.config_path(user, config)
    lines = []
    for raw in K.read_text(path).splitlines():
        if not raw.strip():
            continue
        if raw.strip().startswith("#"):
            lines.append(raw.strip() + "\n")
            continue
        parsed = K.parse_line(raw)
        if parsed is None:
            continue  # Salt drops lines it cannot read when it rewrites the file
        if parsed.key != key:
            lines.append(raw.strip() + "\n")
    _write(path, lines, user)
    return "Key removed"


def _line(key: str, enc: str, comment: str, options: list[str]) -> K.KeyLine:
    return K.KeyLine(K.refine_enc(enc), key, comment, tuple(options))


def present(ctx: StateContext, name: str, user: str, enc: str = "ssh-rsa", comment: str = "", source: str = "",
            options: list[str] | None = None, config: str = DEFAULT_CONFIG, fingerprint_hash_type: str | None = None,
            **kwargs: Any) -> dict[str, Any]:
    """The key ``name`` (or every key of ``source``) is in ``user``'s authorized_keys."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        if not source:
            name, enc, comment, opts = K.split_name(name, enc, comment, options)
            wanted = _line(name, enc, comment, opts)
            if ctx.test:
                status = _status(user, wanted, config, fingerprint_hash_type)
                ret["result"] = True if status == "exists" else None
                ret["comment"] = {
                    "add": f"Key {name} for user {user} is set to be added",
                    "update": f"Key {name} for user {user} is set to be updated",
                    "exists": f"The authorized host key {name} is already present for user {user}",
                }[status]
                return ret
            data = _set_key(user, wanted, config, fingerprint_hash_type)
        else:
            keys = _source_keys(ctx, source, fingerprint_hash_type)
            if ctx.test:
                return _present_test_source(ret, user, source, keys, config, fingerprint_hash_type)
            if keys is None:
                data = "no key"
            elif not keys:
                ret.update(result=False, comment=f"No keys detected in {source}. Is file properly formatted?")
                return ret
            else:
                results = [_set_key(user, _line(k.key, k.enc, k.comment, list(options or k.options)), config,
                                    fingerprint_hash_type) for k in keys.values()]
                data = next((r for r in ("fail", "invalid", "replace", "new") if r in results), "no change")
    except (K.KeyError_, _source.SourceError, OSError) as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    return _present_ret(ret, name, user, source, data)


def _present_test_source(ret: dict[str, Any], user: str, source: str, keys: dict[str, K.KeyLine] | None,
                         config: str, hash_type: str | None) -> dict[str, Any]:
    if keys:
        lines = "".join(f"Set to {status}: {key}\n" for key, status in (
            (k.key, _status(user, _line(k.key, k.enc, k.comment, list(k.options)), config, hash_type))
            for k in keys.values()) if status != "exists")
        if lines:
            ret.update(result=None, comment=lines)
            return ret
    elif keys is not None:
        ret.update(result=False, comment=f"No keys detected in {source}. Is file properly formatted?")
        return ret
    ret["comment"] = f"All host keys in file {source} are already present"
    return ret


def _present_ret(ret: dict[str, Any], name: str, user: str, source: str, data: str) -> dict[str, Any]:
    if data == "replace":
        ret["changes"][name] = "Updated"
        ret["comment"] = f"The authorized host key {name} for user {user} was updated"
    elif data == "no change":
        ret["comment"] = f"The authorized host key {name} is already present for user {user}"
    elif data == "new":
        ret["changes"][name] = "New"
        ret["comment"] = f"The authorized host key {name} for user {user} was added"
    elif data == "no key":
        ret.update(result=False, comment=f"Failed to add the ssh key. Source file {source} is missing")
    elif data == "fail":
        ret.update(result=False, comment="Failed to add the ssh key. Is the home directory available, and/or does "
                                         "the key file exist?")
    else:
        ret.update(result=False, comment="Invalid public ssh key, most likely has spaces or invalid syntax")
    return ret


def absent(ctx: StateContext, name: str, user: str, enc: str = "ssh-rsa", comment: str = "", source: str = "",
           options: list[str] | None = None, config: str = DEFAULT_CONFIG, fingerprint_hash_type: str | None = None,
           **kwargs: Any) -> dict[str, Any]:
    """The key ``name`` (or every key of ``source``) is not in ``user``'s authorized_keys."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    try:
        if source:
            keys = _source_keys(ctx, source, fingerprint_hash_type)
            if ctx.test:
                present_keys = [k for k in (keys or {}) if k in _current(user, config, fingerprint_hash_type)]
                if present_keys:
                    ret.update(result=None, comment="".join(f"Set to remove: {k}\n" for k in present_keys))
                elif keys is not None and not keys:
                    ret.update(result=False, comment=f"No keys detected in {source}. Is file properly formatted?")
                else:
                    ret["comment"] = f"All host keys in file {source} are already absent"
                return ret
            if keys is None:
                ret["comment"] = f"Source file {source} is missing: no key removed"
                return ret
            if not keys:
                ret.update(result=False, comment=f"No keys detected in {source}. Is file properly formatted?")
                return ret
            outcomes = [_remove_key(user, key, config, fingerprint_hash_type) for key in keys]
            ret["comment"] = "Key removed" if "Key removed" in outcomes else "Key not present"
        else:
            name, enc, comment, _opts = K.split_name(name, enc, comment, options)
            if ctx.test:
                present_now = name in _current(user, config, fingerprint_hash_type)
                ret.update(result=None if present_now else True,
                           comment=f"Key {name} for user {user} is set for removal" if present_now
                           else "Key is already absent")
                return ret
            ret["comment"] = _remove_key(user, name, config, fingerprint_hash_type)
    except (K.KeyError_, _source.SourceError, OSError) as exc:
        ret.update(result=False, comment=str(exc))
        return ret
    if ret["comment"] == "Key removed":
        ret["changes"][name] = "Removed"
    return ret


def manage(ctx: StateContext, name: str, ssh_keys: list[str], user: str, enc: str = "ssh-rsa", comment: str = "",
           source: str = "", options: list[str] | None = None, config: str = DEFAULT_CONFIG,
           fingerprint_hash_type: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Exactly ``ssh_keys`` in ``user``'s authorized_keys: the others are removed."""
    ret: dict[str, Any] = {"name": "", "changes": {}, "result": True, "comment": ""}
    wanted_words = {word for key in ssh_keys for word in str(key).split(" ")}
    for key in sorted(set(_current(user, config, fingerprint_hash_type)) - wanted_words):
        if ctx.test:
            ret.update(result=None, comment=f"{key} Key set for removal")
        else:
            ret["changes"][key] = absent(ctx, key, user, config=config,
                                         fingerprint_hash_type=fingerprint_hash_type)["comment"]
    for key in ssh_keys:
        part = present(ctx, str(key), user, enc, comment, source, options, config, fingerprint_hash_type)
        if part["changes"]:
            ret["changes"].update(part["changes"])
        else:
            ret["comment"] = (ret["comment"] + "\n" + part["comment"]).strip()
        if part["result"] is None:
            ret["result"] = None
        elif not part["result"]:
            ret["result"] = False
    return ret
