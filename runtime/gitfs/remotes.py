"""Salt's gitfs / git_pillar configuration, read into ``Remote`` values (no I/O, no git library).

A remote is configured as Salt 3008 reads it (salt/utils/gitfs.py):

* ``gitfs_remotes``: each entry a URL, or a one-key mapping ``{URL: [{param: value}, ...]}``
  whose params override the global ``gitfs_<param>`` keys for that remote;
* ``ext_pillar: - git: [...]``: each entry ``'<branch> <url>'`` (a bare URL takes
  ``git_pillar_branch``), or ``{'<branch> <url>': [{param: value}, ...]}``.

Per-remote parameters are checked against Salt's lists; an unknown one is an
error naming the remote and the valid names (Salt refuses to start gitfs then).
Credentials (``user``, ``password``, ``passphrase``, ``privkey``, ``pubkey``)
are kept in ``Auth``, whose repr hides them, and every message names a remote
by ``display_url`` (the URL without any ``user:password@``).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.config import option

GITFS = "gitfs"
GIT_PILLAR = "git_pillar"

VALID_REF_TYPES = ("branch", "tag", "sha")
DEFAULT_REFSPECS = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
AUTH_PARAMS = ("user", "password", "pubkey", "privkey", "passphrase", "insecure_auth")

# Salt 3008: salt/fileserver/gitfs.py and salt/pillar/git_pillar.py
GITFS_OVERRIDES = ("base", "fallback", "mountpoint", "root", "ssl_verify", "saltenv_whitelist", "saltenv_blacklist",
                   "refspecs", "disable_saltenv_mapping", "ref_types", "update_interval", "proxy", "depth")
GITFS_ONLY = ("all_saltenvs", "name", "saltenv")
GIT_PILLAR_OVERRIDES = ("base", "env", "root", "ssl_verify", "refspecs", "fallback", "proxy", "ref_types",
                        "disable_saltenv_mapping", "depth")
GIT_PILLAR_ONLY = ("name", "mountpoint", "all_saltenvs")
PER_SALTENV_PARAMS = ("mountpoint", "root", "ref")

# Salt's defaults for the global keys (salt/config/__init__.py), used when opts lack a key
GLOBAL_DEFAULTS: dict[str, Any] = {
    "base": "master", "root": "", "mountpoint": "", "fallback": "", "env": "", "branch": "master",
    "ssl_verify": True, "saltenv_whitelist": [], "saltenv_blacklist": [], "refspecs": list(DEFAULT_REFSPECS),
    "disable_saltenv_mapping": False, "ref_types": list(VALID_REF_TYPES), "update_interval": 60, "proxy": "",
    "depth": 1, "user": "", "password": "", "pubkey": "", "privkey": "", "passphrase": "", "insecure_auth": False,
}

_BOOL_PARAMS = {"ssl_verify", "insecure_auth", "disable_saltenv_mapping"}
_LIST_PARAMS = {"saltenv_whitelist", "saltenv_blacklist", "refspecs", "ref_types"}
_SCP_LIKE = re.compile(r"^([^@:/]+)@([^:]+):(.+)$")
_URL_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")
# Salt 3008 accepts these schemes; saltpan also accepts git:// (libgit2 speaks it)
_SCHEMES = ("http", "https", "ssh", "ftp", "sftp", "file", "git")


class GitConfigError(Exception):
    """A gitfs / git_pillar configuration problem, naming the key and the remote."""


@dataclass(frozen=True)
class Auth:
    """Credentials of a remote; never part of a message or a repr."""

    user: str = ""
    password: str = field(default="", repr=False)
    pubkey: str = field(default="", repr=False)
    privkey: str = field(default="", repr=False)
    passphrase: str = field(default="", repr=False)
    insecure_auth: bool = False

    def secrets(self) -> list[str]:
        return [s for s in (self.password, self.passphrase) if s]


@dataclass(frozen=True)
class SaltenvConf:
    """Per-saltenv overrides of a gitfs remote (``saltenv: [{dev: [{ref: develop}]}]``)."""

    ref: str | None = None
    mountpoint: str | None = None
    root: str | None = None


@dataclass(frozen=True)
class Remote:
    """One configured git remote with its effective options."""

    role: str  # gitfs or git_pillar
    id: str  # the entry as configured: URL (gitfs) or '<branch> <url>' (git_pillar); hashed for the cache dir
    url: str
    where: str  # config key and position, for messages: "gitfs_remotes[2]"
    base: str = "master"
    root: str = ""
    mountpoint: str = ""
    ref_types: tuple[str, ...] = VALID_REF_TYPES
    refspecs: tuple[str, ...] = DEFAULT_REFSPECS
    fallback: str = ""
    disable_saltenv_mapping: bool = False
    saltenv_whitelist: tuple[str, ...] = ()
    saltenv_blacklist: tuple[str, ...] = ()
    update_interval: int = 60
    ssl_verify: bool = True
    proxy: str = ""
    name: str | None = None
    all_saltenvs: str | None = None
    saltenv: Mapping[str, SaltenvConf] = field(default_factory=dict)
    global_saltenv: Mapping[str, SaltenvConf] = field(default_factory=dict)
    auth: Auth = field(default_factory=Auth)
    branch: str | None = None  # git_pillar: the branch (or __env__) before the URL
    env: str = ""  # git_pillar: the pillar environment this remote feeds ('' = from the branch)

    # -- naming ---------------------------------------------------------------------
    @property
    def display_url(self) -> str:
        return safe_url(self.url)

    @property
    def label(self) -> str:
        """How messages name the remote: "gitfs remote 'https://host/repo.git'"."""
        shown = self.display_url if self.branch is None else f"{self.branch} {self.display_url}"
        return f"{self.role} remote '{shown}'"

    @property
    def cache_key(self) -> str:
        """The directory name of this remote's cache: ``name``, else Salt's hash of the id."""
        if self.name:
            return self.name
        digest = hashlib.sha256(self.id.encode("utf-8")).digest()
        return base64.b64encode(digest).decode("ascii").replace("/", "_")

    # -- saltenv mapping (gitfs) --------------------------------------------------------
    def revmap(self) -> dict[str, list[str]]:
        """ref -> saltenvs it is mapped to by per-remote, then global ``saltenv`` params (Salt's revmap)."""
        out: dict[str, list[str]] = {}
        for env, conf in self.saltenv.items():
            if conf.ref is not None and env != "base":
                out.setdefault(conf.ref, []).append(env)
        mapped = {env for envs in out.values() for env in envs}
        for env, conf in self.global_saltenv.items():
            if env not in mapped and conf.ref is not None:
                out.setdefault(conf.ref, []).append(env)
        return out

    def _per_saltenv(self, env: str, name: str) -> str | None:
        conf = self.saltenv.get(env)
        value = getattr(conf, name) if conf is not None else None
        if value is None:
            glob_conf = self.global_saltenv.get(env)
            value = getattr(glob_conf, name) if glob_conf is not None else None
        return value

    def ref_for(self, env: str) -> str | None:
        """The branch, tag or commit serving saltenv env, or None when env is not mapped."""
        per_env = self._per_saltenv(env, "ref") if env != "base" else None
        if self.all_saltenvs:
            return self.all_saltenvs
        if env == "base":
            return self.base
        if self.disable_saltenv_mapping:
            return per_env
        return per_env or env

    def root_for(self, env: str) -> str:
        value = self._per_saltenv(env, "root")
        return _clean_dir(value if value is not None else self.root)

    def mountpoint_for(self, env: str) -> str:
        value = self._per_saltenv(env, "mountpoint")
        return _clean_dir(strip_proto(value) if value is not None else self.mountpoint)

    def exposes(self, env: str) -> bool:
        """``saltenv_whitelist`` / ``saltenv_blacklist`` (globs, then regexes), as Salt checks them."""
        black = any(_expr_match(env, e) for e in self.saltenv_blacklist)
        white = any(_expr_match(env, e) for e in self.saltenv_whitelist)
        if self.saltenv_blacklist and self.saltenv_whitelist:
            return not black and white
        if self.saltenv_blacklist:
            return not black
        if self.saltenv_whitelist:
            return white
        return True

    def envs_from_refs(self, branches: list[str], tags: list[str]) -> set[str]:
        """The saltenvs a remote's branches and tags give (Salt's _get_envs_from_ref_paths + revmap)."""
        revmap = self.revmap()
        out: set[str] = set()
        if is_hex(self.base):
            out.add("base")
        names = (branches if "branch" in self.ref_types else []) + (tags if "tag" in self.ref_types else [])
        for name in names:
            if name in revmap:
                out.update(revmap[name])
            elif name == self.base:
                out.add("base")
            elif not self.disable_saltenv_mapping:
                out.add(name)
        for envs in revmap.values():
            out.update(envs)
        return {env for env in out if self.exposes(env)}

    # -- git_pillar ---------------------------------------------------------------------
    def checkout_target(self, pillarenv: str | None, saltenv: str | None) -> str:
        """The branch or tag a git_pillar remote compiles from (``__env__`` follows the environment)."""
        if self.branch == "__env__":
            if self.all_saltenvs:
                return self.all_saltenvs
            target = pillarenv or saltenv or "base"
            return self.base if target == "base" else str(target)
        return str(self.branch)

    def pillar_env(self, pillarenv: str | None, saltenv: str | None, git_pillar_base: str) -> str:
        """The pillar environment a git_pillar remote's data belongs to (Salt's GitPillar.checkout)."""
        if self.branch == "__env__" and self.all_saltenvs:
            env = pillarenv or saltenv or "base"
        elif self.env:
            env = self.env
        elif self.branch == self.base:
            env = "base"
        else:
            target = self.checkout_target(pillarenv, saltenv)
            env = "base" if target == self.base else target
        if env == "__env__":
            env = pillarenv or saltenv or git_pillar_base
        return str(env)


# -- helpers ----------------------------------------------------------------------------

def safe_url(url: str) -> str:
    """The URL without credentials: 'https://user:secret@host/x' -> 'https://host/x'."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rsplit("@", 1)[1]
        user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
        # an ssh user name is not a secret; an http user:password pair is
        keep = f"{user}@" if parts.scheme == "ssh" and ":" not in parts.netloc.rsplit("@", 1)[0] else ""
        return urllib.parse.urlunsplit((parts.scheme, keep + host, parts.path, parts.query, parts.fragment))
    return url


def strip_proto(value: str) -> str:
    return re.sub(r"^[^:/]+://", "", value)


def is_hex(value: str) -> bool:
    try:
        int(value, 16)
        return True
    except (TypeError, ValueError):
        return False


def _clean_dir(value: str) -> str:
    return "/".join(p for p in str(value).split("/") if p not in ("", "."))


def _expr_match(value: str, expr: str) -> bool:
    if fnmatch.fnmatch(value, expr):
        return True
    try:
        return re.match(rf"\A{expr}\Z", value) is not None
    except re.error:
        return False


def remote_url(text: str) -> str:
    """``git@host:path`` (scp-like ssh) -> ``ssh://git@host/path``; other URLs unchanged (Salt's remote_to_url)."""
    found = _SCP_LIKE.match(text)
    if found and "://" not in text:
        user, host, path = found.groups()
        return f"ssh://{user}@{host}{path if path.startswith('/') else '/' + path}"
    return text


def valid_url(url: str) -> bool:
    if any(ch not in _URL_CHARS for ch in url):
        return False
    return urllib.parse.urlsplit(url).scheme in _SCHEMES


def _coerce(param: str, value: Any, where: str) -> Any:
    if param in _BOOL_PARAMS:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        if isinstance(value, int):
            return bool(value)
        raise GitConfigError(f"{where}: '{param}' must be true or false, got {value!r}")
    if param in _LIST_PARAMS:
        if isinstance(value, str):
            return [x.strip() for x in value.split(",") if x.strip()]
        if isinstance(value, list):
            return [str(x) for x in value]
        if value is None:
            return []
        return [str(value)]
    if param == "update_interval":
        try:
            interval = int(value)
        except (TypeError, ValueError):
            raise GitConfigError(f"{where}: 'update_interval' must be a number of seconds, got {value!r}") from None
        if interval <= 0:
            raise GitConfigError(f"{where}: 'update_interval' must be at least 1 second, got {interval}")
        return interval
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise GitConfigError(f"{where}: '{param}' must be a string, got {type(value).__name__} {value!r}")
    return str(value)


def _pairs(value: Any, where: str) -> list[tuple[str, Any]]:
    """A Salt 'dictlist' ([{k: v}, {k2: v2}] or a mapping) as (key, value) pairs, in order."""
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    if not isinstance(value, list):
        raise GitConfigError(f"{where}: per-remote parameters must be a list of one-key mappings "
                             f"([{{root: salt}}, {{base: main}}]), got {type(value).__name__} {value!r}")
    out = []
    for item in value:
        if not isinstance(item, dict) or len(item) != 1:
            raise GitConfigError(f"{where}: each per-remote parameter must be a one-key mapping such as "
                                 f"{{root: salt}}, got {item!r}")
        key, val = next(iter(item.items()))
        out.append((str(key), val))
    return out


def _saltenv_map(value: Any, where: str) -> dict[str, SaltenvConf]:
    """``[{dev: [{ref: develop}, {mountpoint: x}]}]`` -> {dev: SaltenvConf(ref='develop', mountpoint='x')}."""
    if value in (None, "", []):
        return {}
    out: dict[str, SaltenvConf] = {}
    for env, params in _pairs(value, where):
        conf: dict[str, str] = {}
        for key, val in _pairs(params if params is not None else [], f"{where}: saltenv '{env}'"):
            if key not in PER_SALTENV_PARAMS:
                raise GitConfigError(f"{where}: saltenv '{env}': invalid parameter '{key}' (valid: "
                                     f"{', '.join(PER_SALTENV_PARAMS)})")
            if val is None or isinstance(val, (dict, list)):
                raise GitConfigError(f"{where}: saltenv '{env}': '{key}' must be a string, got {val!r}")
            conf[key] = strip_proto(str(val)) if key == "mountpoint" else str(val)
        out[env] = SaltenvConf(**conf)
    return out


def _globals(opts: Mapping[str, Any], role: str, params: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for param in params:
        key = f"{role}_{param}"
        value = opts.get(key, GLOBAL_DEFAULTS.get(param))
        out[param] = _coerce(param, value, f"option '{key}'") if value is not None else GLOBAL_DEFAULTS.get(param)
    return out


def _build(role: str, entry_id: str, url: str, where: str, values: dict[str, Any],
           global_saltenv: dict[str, SaltenvConf], branch: str | None = None) -> Remote:
    ref_types = tuple(t.lower() for t in values.get("ref_types") or VALID_REF_TYPES)
    bad = [t for t in ref_types if t not in VALID_REF_TYPES]
    if bad:
        raise GitConfigError(f"{where}: invalid ref_types {', '.join(bad)} (valid: {', '.join(VALID_REF_TYPES)})")
    saltenv = dict(values.get("saltenv") or {})
    base = str(values.get("base") or "master")
    base_conf = saltenv.get("base")
    if base_conf is not None and base_conf.ref is not None:
        # Salt: a 'base' entry in the saltenv mapping rewrites the remote's base
        base = base_conf.ref
        saltenv["base"] = SaltenvConf(None, base_conf.mountpoint, base_conf.root)
    auth = Auth(str(values.get("user") or ""), str(values.get("password") or ""), str(values.get("pubkey") or ""),
                str(values.get("privkey") or ""), str(values.get("passphrase") or ""),
                bool(values.get("insecure_auth", False)))
    name = values.get("name")
    if name is not None:
        name = str(name)
        if not name or "/" in name or name in (".", "..") or "\x00" in name:
            raise GitConfigError(f"{where}: 'name' must be a plain directory name, got {name!r}")
    all_saltenvs = values.get("all_saltenvs")
    return Remote(
        role=role, id=entry_id, url=url, where=where, base=base,
        root=_clean_dir(values.get("root") or ""),
        mountpoint=_clean_dir(strip_proto(str(values.get("mountpoint") or ""))),
        ref_types=ref_types, refspecs=tuple(values.get("refspecs") or DEFAULT_REFSPECS),
        fallback=str(values.get("fallback") or ""),
        disable_saltenv_mapping=bool(values.get("disable_saltenv_mapping", False)),
        saltenv_whitelist=tuple(values.get("saltenv_whitelist") or ()),
        saltenv_blacklist=tuple(values.get("saltenv_blacklist") or ()),
        update_interval=int(values.get("update_interval") or 60),
        ssl_verify=bool(values.get("ssl_verify", True)), proxy=str(values.get("proxy") or ""),
        name=name, all_saltenvs=str(all_saltenvs) if all_saltenvs not in (None, "") else None,
        saltenv=saltenv, global_saltenv=global_saltenv, auth=auth, branch=branch,
        env=str(values.get("env") or ""),
    )


def _check_url(url: str, where: str) -> str:
    url = remote_url(url.strip())
    if not valid_url(url):
        raise GitConfigError(f"{where}: '{safe_url(url)}' is not a git URL saltpan can fetch (use https://, "
                             "ssh://, user@host:path, git:// or file:///path)")
    return url


def _per_remote(entry: Any, where: str, allowed: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """(id, raw per-remote params) of one remotes-list entry."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, dict) and len(entry) == 1:
        entry_id, params = next(iter(entry.items()))
        if not isinstance(entry_id, str):
            raise GitConfigError(f"{where}: the remote must be a string (quote the URL), got {entry_id!r}")
        if not params:
            raise GitConfigError(f"{where}: '{safe_url(entry_id)}' has no per-remote parameters; remove the "
                                 "trailing colon after the URL")
        raw: dict[str, Any] = {}
        for key, value in _pairs(params, f"{where} '{safe_url(entry_id)}'"):
            if key not in allowed:
                raise GitConfigError(f"{where} '{safe_url(entry_id)}': invalid parameter '{key}' (valid: "
                                     f"{', '.join(sorted(allowed))})")
            raw[key] = value
        return entry_id, raw
    raise GitConfigError(f"{where}: a remote must be a URL or a one-key mapping {{URL: [{{param: value}}, ...]}}, "
                         f"got {entry!r}")


def gitfs_remotes(opts: Mapping[str, Any]) -> list[Remote]:
    """The ``gitfs_remotes`` of a configuration, with global ``gitfs_*`` defaults applied."""
    entries = opts.get("gitfs_remotes") or []
    if not isinstance(entries, list):
        raise GitConfigError(f"option 'gitfs_remotes' must be a list of remotes, got {type(entries).__name__}")
    global_params = GITFS_OVERRIDES + AUTH_PARAMS
    defaults = _globals(opts, GITFS, global_params)
    global_saltenv = _saltenv_map(opts.get("gitfs_saltenv"), "option 'gitfs_saltenv'")
    allowed = global_params + GITFS_ONLY
    remotes = []
    for index, entry in enumerate(entries):
        where = f"gitfs_remotes[{index}]"
        entry_id, raw = _per_remote(entry, where, allowed)
        url = _check_url(entry_id, where)
        values = dict(defaults)
        for key, value in raw.items():
            if key == "saltenv":
                values[key] = _saltenv_map(value, f"{where} '{safe_url(entry_id)}'")
            elif key in ("name", "all_saltenvs"):
                values[key] = None if value is None else str(value)
            else:
                values[key] = _coerce(key, value, f"{where} '{safe_url(entry_id)}'")
        remotes.append(_build(GITFS, entry_id, url, where, values, global_saltenv))
    _check_collisions(remotes)
    return remotes


def git_pillar_remotes(opts: Mapping[str, Any], repos: list[Any], where: str = "ext_pillar git") -> list[Remote]:
    """The remotes of one ``ext_pillar: - git: [...]`` entry, with global ``git_pillar_*`` defaults applied."""
    global_params = GIT_PILLAR_OVERRIDES + AUTH_PARAMS
    defaults = _globals(opts, GIT_PILLAR, global_params + ("update_interval",))
    default_branch = option(opts, "git_pillar_branch", str)
    allowed = global_params + GIT_PILLAR_ONLY
    remotes = []
    for index, entry in enumerate(repos):
        here = f"{where}[{index}]"
        entry_id, raw = _per_remote(entry, here, allowed)
        parts = entry_id.split(None, 1)
        if len(parts) == 2 and not valid_url(remote_url(parts[0])):
            branch, url_text = parts
        else:
            branch, url_text = default_branch, entry_id.strip()
        url = _check_url(url_text, here)
        if branch != "__env__" and "base" in raw:
            raise GitConfigError(f"{here} '{safe_url(entry_id)}': 'base' can only be set when the branch is "
                                 "__env__")
        values = dict(defaults)
        for key, value in raw.items():
            if key in ("name", "all_saltenvs"):
                values[key] = None if value is None else str(value)
            else:
                values[key] = _coerce(key, value, f"{here} '{safe_url(entry_id)}'")
        remotes.append(_build(GIT_PILLAR, entry_id, url, here, values, {}, branch=branch))
    _check_collisions(remotes)
    return remotes


def _check_collisions(remotes: list[Remote]) -> None:
    seen: dict[str, Remote] = {}
    for remote in remotes:
        other = seen.get(remote.cache_key)
        if other is not None:
            raise GitConfigError(f"{remote.where} and {other.where}: {remote.label} and {other.label} would share "
                                 "one cache directory; give one of them a different 'name'")
        seen[remote.cache_key] = remote


def backends(opts: Mapping[str, Any]) -> list[str]:
    """``fileserver_backend`` as a list of 'roots' and 'gitfs' ('git' is gitfs), in order."""
    value = opts.get("fileserver_backend") or ["roots"]
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list):
        raise GitConfigError(f"option 'fileserver_backend' must be a list such as [roots, gitfs], got {value!r}")
    out: list[str] = []
    for name in value:
        name = str(name)
        name = "gitfs" if name == "git" else name
        if name not in ("roots", "gitfs"):
            raise GitConfigError(f"option 'fileserver_backend': backend '{name}' is not supported by saltpan "
                                 "(supported: roots, gitfs)")
        if name not in out:
            out.append(name)
    return out


def configured_remotes(opts: Mapping[str, Any], roles: tuple[str, ...] = (GITFS, GIT_PILLAR)) -> list[Remote]:
    """Every configured remote of roles: gitfs (when ``fileserver_backend`` has it), then each git
    ext_pillar entry's, a repository shared by several entries once.  Raises GitConfigError, which is
    also how a master checks the configuration at start (``fileserver_backend`` included)."""
    names = backends(opts)
    remotes: list[Remote] = []
    if GITFS in roles and "gitfs" in names:
        remotes += gitfs_remotes(opts)
    if GIT_PILLAR not in roles:
        return remotes
    seen: set[str] = set()
    entries = opts.get("ext_pillar") or []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or "git" not in entry:
            continue
        args = entry["git"]
        items = args if isinstance(args, list) else [args]
        for remote in git_pillar_remotes(opts, items, f"ext_pillar[{index}] git"):
            if remote.cache_key not in seen:
                seen.add(remote.cache_key)
                remotes.append(remote)
    return remotes
