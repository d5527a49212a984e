"""config: values from the minion config, grains, pillar and the master's opts in pillar."""

from __future__ import annotations

import fnmatch
import logging
import urllib.parse
from typing import TYPE_CHECKING, Any

from compiler import saltdata
from runtime import config as config_table
from runtime.modules.registry import pure

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

log = logging.getLogger("saltpan.modules.config")

_MISSING = object()

# salt.modules.config.DEFAULTS: module settings every Salt minion has (the ones saltpan can know)
DEFAULTS: dict[str, Any] = {
    "mongo.db": "salt",
    "mongo.password": "",
    "mongo.port": 27017,
    "mongo.user": "",
    "redis.db": "0",
    "redis.host": "salt",
    "redis.port": 6379,
    "test.foo": "unconfigured",
    "ca.cert_base_path": "/etc/pki",
    "solr.cores": [],
    "solr.host": "localhost",
    "solr.port": "8983",
    "solr.baseurl": "/solr",
    "solr.type": "master",
    "solr.request_timeout": None,
    "solr.init_script": "/etc/rc.d/solr",
    "solr.dih.import_options": {"clean": False, "optimize": True, "commit": True, "verbose": False},
    "solr.backup_path": None,
    "solr.num_backups": 1,
    "poudriere.config": "/usr/local/etc/poudriere.conf",
    "poudriere.config_dir": "/usr/local/etc/poudriere.d",
    "ldap.uri": "",
    "ldap.server": "localhost",
    "ldap.port": "389",
    "ldap.tls": False,
    "ldap.no_verify": False,
    "ldap.anonymous": True,
    "ldap.scope": 2,
    "ldap.attrs": None,
    "ldap.binddn": "",
    "ldap.bindpw": "",
    "hosts.file": "/etc/hosts",
    "aliases.file": "/etc/aliases",
    "virt": {"tunnel": False, "images": "/srv/salt-images"},
    "docker.exec_driver": "docker-exec",
    "docker.compare_container_networks": {
        "static": ["Aliases", "Links", "IPAMConfig"],
        "automatic": ["IPAddress", "Gateway", "GlobalIPv6Address", "IPv6Gateway"],
    },
}

_VALID_PROTOS = ("salt", "file", "http", "https", "ftp", "swift", "s3")


def _master(env: ModuleEnv) -> Any:
    master = env.pillar.get("master", {}) if hasattr(env.pillar, "get") else {}
    return master if hasattr(master, "get") else {}


@pure
def get(env: ModuleEnv, key: str, default: Any = "", delimiter: str = ":", merge: str | None = None,
        omit_opts: bool = False, omit_pillar: bool = False, omit_master: bool = False,
        omit_grains: bool = False) -> Any:
    """The first value found at key in: minion opts, grains, pillar, the master's opts (pillar
    'master', with pillar_opts), Salt's module defaults; else default.  merge='recurse' or
    'overwrite' merges dict values of all of them instead (opts winning)."""
    if merge is None:
        sources = []
        if not omit_opts:
            sources.append(env.opts)
        if not omit_grains:
            sources.append(env.grains)
        if not omit_pillar:
            sources.append(env.pillar)
        if not omit_master:
            sources.append(_master(env))
        sources.append(DEFAULTS)
        for source in sources:
            value = saltdata.traverse(source, key, _MISSING, delimiter)
            if value is not _MISSING:
                return value
        return default
    if merge not in ("recurse", "overwrite"):
        log.warning("Unsupported merge strategy '%s'. Falling back to 'recurse'.", merge)
        merge = "recurse"
    merge_lists = config_table.option(env.opts, "pillar_merge_lists", bool)
    data: Any = dict(DEFAULTS)
    for source in (_master(env), env.pillar, env.grains, env.opts):
        data = saltdata.merge(data, source, strategy=merge, merge_lists=merge_lists)
    value = saltdata.traverse(data, key, _MISSING, delimiter)
    return default if value is _MISSING else value


@pure
def option(env: ModuleEnv, value: str, default: Any = None, omit_opts: bool = False, omit_grains: bool = False,
           omit_pillar: bool = False, omit_master: bool = False, omit_all: bool = False,
           wildcard: bool = False) -> Any:
    """The top-level key `value` (no nesting) from opts, grains, pillar, the master's opts or the
    module defaults; with wildcard=True, a dict of every key matching the glob."""
    if omit_all:
        omit_opts = omit_grains = omit_pillar = omit_master = True
    if default is None:
        default = {} if wildcard else ""
    sources = [(omit_opts, env.opts), (omit_grains, env.grains), (omit_pillar, env.pillar),
               (omit_master, _master(env))]
    if not wildcard:
        for omit, data in sources:
            if not omit and value in data:
                return data[value]
        return DEFAULTS.get(value, default) if value in DEFAULTS else default
    ret: dict[str, Any] = {}
    for omit, data in reversed(sources):
        if not omit:
            ret.update({k: data[k] for k in fnmatch.filter(list(data), value)})
    for k in fnmatch.filter(list(DEFAULTS), value):
        ret.setdefault(k, DEFAULTS[k])
    return ret or default


@pure
def merge(env: ModuleEnv, value: str, default: Any = "", omit_opts: bool = False, omit_master: bool = False,
          omit_pillar: bool = False) -> Any:
    """The top-level key `value` from opts, the master's opts and pillar, dicts and lists merged."""
    ret: Any = None
    if not omit_opts and value in env.opts:
        ret = env.opts[value]
        if isinstance(ret, str):
            return ret
    for omit, data in ((omit_master, _master(env)), (omit_pillar, env.pillar)):
        if omit or value not in data:
            continue
        tmp = data[value]
        if ret is None:
            ret = tmp
            if isinstance(ret, str):
                return ret
        elif isinstance(ret, dict) and isinstance(tmp, dict):
            ret = {**tmp, **ret}
        elif isinstance(ret, (list, tuple)) and isinstance(tmp, (list, tuple)):
            ret = list(ret) + list(tmp)
    if ret is None and value in DEFAULTS:
        return DEFAULTS[value]
    return default if ret is None else ret


@pure
def dot_vals(env: ModuleEnv, value: str) -> dict[str, Any]:
    """Every key of the master's opts and the minion opts that starts with `value.`."""
    ret = {k: v for k, v in _master(env).items() if str(k).startswith(f"{value}.")}
    ret.update({k: v for k, v in env.opts.items() if str(k).startswith(f"{value}.")})
    return ret


@pure
def items(env: ModuleEnv) -> dict[str, Any]:
    """The minion's opts."""
    return dict(env.opts)


@pure
def valid_fileproto(env: ModuleEnv, uri: str) -> bool:
    """True when uri's scheme is one Salt's file client fetches (salt, file, http, https, ftp, swift, s3)."""
    return urllib.parse.urlparse(uri).scheme in _VALID_PROTOS


@pure
def backup_mode(env: ModuleEnv, backup: str = "") -> Any:
    """backup, or the backup_mode option."""
    return backup or option(env, "backup_mode")


@pure
def manage_mode(env: ModuleEnv, mode: Any) -> str | None:
    """A file mode as Salt normalises it: quotes and leading zeros gone, zero-padded to 4 digits."""
    if mode is None:
        return None
    text = str(mode).replace("0o", "0")
    return text.strip('"').strip("'").lstrip("0").zfill(4)
