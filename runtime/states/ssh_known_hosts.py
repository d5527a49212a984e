"""The ``ssh_known_hosts`` state module: a host's keys in a known_hosts file (present, absent).

As Salt 3008's, through OpenSSH's tools: ``ssh-keygen -F`` finds a host's entries (hashed or
not), ``ssh-keygen -R`` removes them, ``ssh-keyscan`` fetches a host's keys when no ``key`` is
given, ``ssh-keygen -H`` hashes the file (``hash_known_hosts``, default True). The file is
``/etc/ssh/ssh_known_hosts``, or ``.ssh/known_hosts`` under the home of ``user``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F
from runtime.states import _ssh_keys as K

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "present"]

DEFAULT_PORT = 22


def unavailable() -> str | None:
    return None if shutil.which("ssh-keygen") else "The module requires the ssh-keygen binary."


@dataclass(frozen=True)
class Entry:
    hostname: str
    enc: str
    key: str
    fingerprint: str

    def as_dict(self) -> dict[str, str]:
        return {"hostname": self.hostname, "enc": self.enc, "key": self.key, "fingerprint": self.fingerprint}


class KnownHostsError(Exception):
    pass


def _default_config(user: str | None, config: str | None) -> str:
    return config or (".ssh/known_hosts" if user else "/etc/ssh/ssh_known_hosts")


def known_hosts_file(user: str | None, config: str) -> str:
    if os.path.isabs(config):
        return config
    if not user:
        raise KnownHostsError("Cannot determine absolute path to file.")
    info = K.user_info(user)
    if info is None:
        raise KnownHostsError(f"User {user} does not exist")
    return os.path.join(info.pw_dir, config)


def ssh_hostname(hostname: str, port: Any) -> str:
    return hostname if not port or int(port) == DEFAULT_PORT else f"[{hostname}]:{port}"


def _parse(lines: list[str], hash_type: str | None) -> list[Entry]:
    out = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3:
            continue
        fingerprint = K.fingerprint(parts[2], hash_type)
        if fingerprint:
            out.append(Entry(parts[0], parts[1], parts[2], fingerprint))
    return out


def _find_output(path: str, hostname: str, port: Any) -> list[str]:
    if not os.path.isfile(path):
        return []
    res = cmdrun.run(["ssh-keygen", "-F", ssh_hostname(hostname, port), "-f", path], cwd="/")
    return res.stdout.splitlines()


def entries(path: str, hostname: str, port: Any = None, hash_type: str | None = None) -> list[Entry]:
    return _parse(_find_output(path, hostname, port), hash_type)


def keyscan_command(hostname: str, enc: str | None, port: Any, hash_known_hosts: bool, timeout: Any) -> list[str]:
    cmd = ["ssh-keyscan"]
    if port:
        cmd += ["-p", str(port)]
    if enc:
        cmd += ["-t", enc]
    if hash_known_hosts:
        cmd.append("-H")
    return cmd + ["-T", str(timeout), hostname]


def _keyscan(hostname: str, enc: str | None, port: Any, hash_known_hosts: bool, timeout: Any,
             hash_type: str | None) -> list[Entry]:
    for _attempt in range(5):  # Salt tries five times
        res = cmdrun.run(keyscan_command(hostname, enc, port, hash_known_hosts, timeout), cwd="/",
                         timeout=float(timeout) + 30)
        found = _parse(res.stdout.splitlines(), hash_type)
        if found:
            return found
    return []


def _owner(user: str | None) -> tuple[int | None, int | None]:
    info = K.user_info(user) if user else None
    if info is None or os.geteuid() != 0:
        return None, None
    return info.pw_uid, info.pw_gid


def _write(path: str, lines: list[str], user: str | None) -> None:
    data = "".join(lines).encode()
    if os.path.exists(path):
        F.write_preserving(path, data)
        return
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
        uid, gid = _owner(user)
        if user:
            if uid is not None:
                os.chown(directory, uid, gid if gid is not None else -1)
            os.chmod(directory, 0o700)
    uid, gid = _owner(user)
    F.atomic_write(path, data, 0o600, uid, gid)


def _hash(path: str, user: str | None) -> None:
    st = os.stat(path)
    cmdrun.run(["ssh-keygen", "-H", "-f", path], cwd="/")
    os.chmod(path, st.st_mode & 0o7777)
    if os.geteuid() == 0:
        os.chown(path, st.st_uid, st.st_gid)
    try:
        os.unlink(path + ".old")  # ssh-keygen -H keeps a copy with the names in clear
    except FileNotFoundError:
        pass


def present(ctx: StateContext, name: str, user: str | None = None, fingerprint: str | None = None,
            key: str | None = None, port: Any = None, enc: str | None = None, config: str | None = None,
            hash_known_hosts: Any = True, timeout: Any = 5, fingerprint_hash_type: str | None = None,
            **kwargs: Any) -> dict[str, Any]:
    """``name``'s key (``key`` + ``enc``, or the ones ``ssh-keyscan`` gets, checked against
    ``fingerprint``) is in the known_hosts file."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": None if ctx.test else True, "comment": ""}
    config = _default_config(user, config)
    if not user and not os.path.isabs(config):
        return dict(ret, result=False, comment='If not specifying a "user", specify an absolute "config".')
    if key and fingerprint:
        return dict(ret, result=False, comment='Specify either "key" or "fingerprint", not both.')
    if key and not enc:
        return dict(ret, result=False, comment='Required argument "enc" if using "key" argument.')
    hashed = hash_known_hosts is True or str(hash_known_hosts).lower() in ("true", "1", "yes")
    try:
        path = known_hosts_file(user, config)
        stored = entries(path, name, port, fingerprint_hash_type)
        if ctx.test:
            if not stored:
                return dict(ret, comment=f"Key for {name} is set to be added to {config}")
            if (key and key not in [e.key for e in stored]) or (
                    fingerprint and fingerprint not in [e.fingerprint for e in stored]):
                return dict(ret, comment=f"Key for {name} is set to be updated in {config}")
            return dict(ret, result=True, comment=f"Host {name} is already in {config}")
        if port is not None and int(port) != DEFAULT_PORT and hashed:
            raise KnownHostsError("argument port can not be used in conjunction with argument hash_known_hosts")
        stored_keys = [e.key for e in stored if enc is None or e.enc == enc]
        check_only = False
        if stored and not (fingerprint and fingerprint not in [e.fingerprint for e in stored]) and not (
                key and key not in stored_keys):
            if key is not None or fingerprint is not None:
                return dict(ret, comment=f"{name} already exists in {config}")
            check_only = True
        if key:
            new = [Entry(name, str(enc), key, K.fingerprint(key, fingerprint_hash_type) or "")]
        else:
            new = _keyscan(name, enc, port, hashed, timeout, fingerprint_hash_type)
            if not new:
                raise KnownHostsError("Unable to receive remote host keys")
            if fingerprint and fingerprint not in [e.fingerprint for e in new]:
                raise KnownHostsError("Remote host public keys found but none of their fingerprints match the one "
                                      "you have provided")
            if check_only and {e.key for e in new} == set(stored_keys):
                return dict(ret, comment=f"{name} already exists in {config}")
        _replace(path, name, port, enc, new, hashed, user)
    except (KnownHostsError, K.KeyError_, cmdrun.CommandError, OSError, ValueError) as exc:
        return dict(ret, result=False, comment=str(exc))
    changes = {"old": [e.as_dict() for e in stored] or None, "new": [e.as_dict() for e in new]}
    if key:
        comment = f"{name}'s key saved to {config} (key: {new[0].key})"
    elif fingerprint:
        comment = f"{name}'s key saved to {config} (fingerprint: {new[0].fingerprint})"
    elif enc:
        comment = f"{name}'s {enc} key saved to {config} (key: {new[0].key})"
    else:
        comment = f"{name}'s key(s) saved to {config}"
    return dict(ret, changes=changes, comment=comment)


def _replace(path: str, name: str, port: Any, enc: str | None, new: list[Entry], hashed: bool,
             user: str | None) -> None:
    """Drop the host's entries (of type ``enc``) and append ``new``."""
    lines = F.read_bytes(path).decode("utf-8", errors="replace").splitlines(keepends=True) \
        if os.path.isfile(path) else []
    found = _find_output(path, name, port)
    drop = set()
    for index in range(0, len(found) - 1, 2):  # "# Host x found: line N" then the entry
        line_no = int(found[index].strip().split()[-1])
        if enc is None or found[index + 1].strip().split()[-2] == enc:
            drop.add(line_no - 1)
    kept = [line for number, line in enumerate(lines) if number not in drop]
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    added = []
    for entry in new:
        if hashed or port in (DEFAULT_PORT, None) or ":" in entry.hostname:
            added.append(f"{entry.hostname} {entry.enc} {entry.key}\n")
        else:
            added.append(f"[{entry.hostname}]:{port} {entry.enc} {entry.key}\n")
    _write(path, kept + added, user)
    if hashed and any(not e.hostname.startswith("|1|") for e in new):
        _hash(path, user)


def absent(ctx: StateContext, name: str, user: str | None = None, config: str | None = None,
           **kwargs: Any) -> dict[str, Any]:
    """No key of ``name`` in the known_hosts file."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    config = _default_config(user, config)
    if not user and not os.path.isabs(config):
        return dict(ret, result=False, comment='If not specifying a "user", specify an absolute "config".')
    try:
        path = known_hosts_file(user, config)
    except KnownHostsError as exc:
        # Salt: the user may be created later in the run; test mode cannot tell, a run fails
        if ctx.test:
            return dict(ret, result=None, comment=f"Key for {name} is set to be removed from {config} ({exc})")
        return dict(ret, result=False, comment=str(exc))
    stored = entries(path, name)
    if not stored:
        return dict(ret, comment="Host is already absent")
    if ctx.test:
        return dict(ret, result=None, comment=f"Key for {name} is set to be removed from {config}")
    res = cmdrun.run(["ssh-keygen", "-R", ssh_hostname(name, None), "-f", path], cwd="/")
    try:
        os.unlink(path + ".old")
    except FileNotFoundError:
        pass
    if res.retcode != 0:
        return dict(ret, result=False, comment=(res.stderr or res.stdout).strip())
    uid, gid = _owner(user)
    if uid is not None:
        os.chown(path, uid, gid if gid is not None else -1)
    return dict(ret, changes={"old": [e.as_dict() for e in stored], "new": None},
                comment=(res.stdout + res.stderr).strip())
