"""Salt-style configuration files for master, minion and offline compiles.

A config file is YAML (JSON is YAML too).  Its ``default_include`` glob
(``minion.d/*.conf`` / ``master.d/*.conf`` beside the file) and an explicit
``include:`` list are merged over it, later files winning.  Relative paths in
path-valued keys resolve against the directory of the file that set them.
Every key we honour is in ``OPTIONS`` with its default, type and meaning; an
unknown key is kept (Salt trees often carry keys for other tools) but a known
key with the wrong type is an error naming the key and the file.
"""

from __future__ import annotations

import copy
import glob
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml


class ConfigError(Exception):
    """A configuration problem, naming the key and the file."""


@dataclass(frozen=True)
class Option:
    default: Any
    kind: str  # str, int, float, bool, list, dict, roots, path, str_or_list, any, num
    role: str  # "both", "master", "minion"
    doc: str


# One table of defaults. Paths here are relative to root_dir unless absolute.
OPTIONS: dict[str, Option] = {
    # identity and grains
    "id": Option(None, "str", "minion", "Minion id. Defaults to the host name (the FQDN)."),
    "grains": Option({}, "dict", "minion", "Static grains merged over the core grains."),
    "grains_file": Option(None, "path", "minion", "A YAML file of extra grains (default: `grains` beside the config file, as Salt's /etc/salt/grains)."),
    "fleet_file": Option(None, "path", "both",
                         "saltpan: a fleet file or directory of grains per minion, used by `saltpan compile` "
                         "(--minion and --all) when no --fleet is given."),
    # trees
    "pillar_roots": Option({"base": ["/srv/pillar"]}, "roots", "both",
                           "Pillar tree per saltenv: {env: [dir, ...]}."),
    "file_roots": Option({"base": ["/srv/salt"]}, "roots", "both", "State/file tree per saltenv: {env: [dir, ...]}."),
    "state_top": Option("top.sls", "str", "both", "Name of the top file in each environment."),
    "renderer": Option("jinja|yaml", "str", "both", "Default renderer pipeline for sls and top files."),
    "renderer_blacklist": Option([], "list", "both", "Renderers that may not be used."),
    "renderer_whitelist": Option([], "list", "both", "When non-empty, the only renderers that may be used."),
    "extension_modules": Option(None, "path", "both",
                                "Directory of custom modules; ext_pillar drivers live in its pillar/ subdirectory."),
    # pillar
    "ext_pillar": Option([], "list", "both", "ext_pillar drivers: [{driver: arguments}, ...]."),
    "ext_pillar_first": Option(False, "bool", "both",
                               "Compile ext_pillar before the sls pillar (sls then win and see it as `pillar`)."),
    "ext_pillar_timeout": Option(30.0, "num", "both",
                                 "Seconds an ext_pillar driver may take before its data is dropped with an error."),
    "ext_pillar_fail_hard": Option(False, "bool", "both",
                                   "Fail the whole pillar compile when an ext_pillar driver fails."),
    "exclude_ext_pillar": Option([], "list", "both", "ext_pillar driver names to skip."),
    "pillar_source_merging_strategy": Option("smart", "str", "both",
                                             "smart, recurse, aggregate, overwrite, none or list."),
    "pillar_merge_lists": Option(False, "bool", "both", "Merge lists (append missing items) instead of replacing."),
    "pillar_opts": Option(False, "bool", "both", "Put the master's opts into pillar under `master`."),
    "pillar_safe_render_error": Option(True, "bool", "both",
                                       "Hide render error details in pillar['_errors'] (details go to the log "
                                       "and to `saltpan compile`'s stderr)."),
    "pillarenv": Option(None, "str", "both", "Compile pillar from this environment only."),
    "pillarenv_from_saltenv": Option(False, "bool", "both", "Use saltenv as pillarenv."),
    "pillar_cache": Option(False, "bool", "master", "Serve a minion's compiled pillar again (pillar.items, state "
                           "runs) until pillar_cache_ttl passes; saltutil.refresh_pillar compiles anew "
                           "(clean_cache=True, its default)."),
    "pillar_cache_ttl": Option(3600, "int", "master", "Seconds a cached pillar stays valid."),
    "pillar_schema": Option({}, "any", "both",
                            "JSON Schema files (JSON or YAML) validating compiled pillar: one file for the whole "
                            "pillar, or {top-level key: file}. Checked by `saltpan compile --validate` "
                            "(docs/fleet.md); relative paths resolve against the config file."),
    "pillar_mask_patterns": Option(["*password*", "*passwd*", "*secret*", "*private_key*", "*token*"], "list",
                                   "both", "Key globs (case-insensitive, any depth) whose values `saltpan compile` "
                                   "masks as `**********` in human output (nested/txt, --explain, --diff, "
                                   "--validate reports); `--unmask` shows them. JSON/YAML pillar output is never "
                                   "masked. See docs/fleet.md."),
    "nodegroups": Option({}, "dict", "both", "Named compound targets: {name: expression or list}."),
    # states
    "saltenv": Option(None, "str", "both", "Restrict highstate to this environment."),
    "top_file_merging_strategy": Option("merge", "str", "both", "merge, same or merge_all."),
    "env_order": Option([], "list", "both", "Order in which environments are evaluated."),
    "default_top": Option("base", "str", "both", "Fallback top file environment for `same`."),
    "state_top_saltenv": Option(None, "str", "both", "Read the top file from this environment only."),
    "state_auto_order": Option(True, "bool", "both", "Order states by declaration order."),
    "failhard": Option(False, "bool", "both", "Stop a state run at the first failure."),
    "test": Option(False, "bool", "minion", "Run states in test mode by default."),
    "state_output": Option("full", "str", "minion", "highstate outputter detail: full, terse, mixed, changes."),
    "state_verbose": Option(True, "bool", "both",
                            "Show states without changes in the highstate outputter (`saltpan call`, and `saltpan run` on a master)."),
    "file_client": Option("remote", "str", "minion", "remote (files and pillar from the master) or local."),
    # paths and logging
    "root_dir": Option("/", "path", "both", "Prefix for the default paths below."),
    "cachedir": Option("var/cache/saltpan", "path", "both", "Cache directory (job cache, minion data cache)."),
    "pki_dir": Option("etc/saltpan/pki", "path", "both", "Key directory (0700)."),
    "sock_dir": Option("var/run/saltpan", "path", "both", "Directory of the ipc sockets (0700)."),
    "pidfile": Option(None, "path", "both",
                      "Pid file of the daemon (default `<root_dir>/var/run/saltpan-master.pid` or "
                      "`saltpan-minion.pid`; null for none)."),
    "log_file": Option(None, "path", "both",
                       "Log file of the daemon (default `<root_dir>/var/log/saltpan/master` or `minion`; null for "
                       "stderr only). Daemons also log to stderr."),
    "log_level": Option("warning", "str", "both", "Log level: quiet, critical, error, warning, info, debug."),
    "log_level_logfile": Option(None, "str", "both", "Log level of log_file (default: log_level)."),
    "default_include": Option(None, "str", "both",
                              "Glob of extra config files relative to this file (minion.d/*.conf, master.d/*.conf)."),
    "include": Option([], "str_or_list", "both", "Extra config files merged over this one."),
    "user": Option(None, "str", "both", "User the daemon runs as (informational)."),
    # transport
    "interface": Option("127.0.0.1", "str", "master", "Address the master binds to."),
    "publish_port": Option(4505, "int", "both", "Publisher port."),
    "ret_port": Option(4506, "int", "master", "Request server port."),
    "worker_threads": Option(5, "int", "master", "Number of MWorker processes."),
    "auto_accept": Option(False, "bool", "master", "Accept every new minion key."),
    "autosign_file": Option(None, "path", "master", "File of minion id globs accepted automatically."),
    "publisher_acl": Option({}, "dict", "master", "Local users allowed to publish: {user: [function globs]}."),
    "keep_jobs": Option(24, "int", "master", "Hours a job stays in the job cache (superseded by keep_jobs_seconds)."),
    "keep_jobs_seconds": Option(86400, "int", "master",
                                "Seconds a job stays in the job cache; 0 keeps jobs forever. When only keep_jobs is "
                                "set, keep_jobs hours (as Salt)."),
    "loop_interval": Option(60, "num", "master", "Seconds between the master's maintenance passes (job cache "
                                                 "pruning)."),
    "rotate_aes_key": Option(True, "bool", "master", "Rotate the publish key when a key is deleted or rejected."),
    "publish_session": Option(86400, "int", "master", "Seconds between periodic publish key rotations."),
    "heartbeat_period": Option(5.0, "num", "master", "Seconds between minion heartbeats (told to minions at auth)."),
    "presence_events": Option(True, "bool", "master", "Fire salt/presence events."),
    "max_pending_keys": Option(1000, "int", "master", "Largest number of pending keys (key-store flooding)."),
    "max_minion_data_size": Option(1024 * 1024, "int", "master",
                                   "saltpan: largest entry of the minion data cache, bytes of JSON: grains (and "
                                   "other data) a minion uploads beyond it are refused `too_large`, the previous "
                                   "copy kept; a compiled pillar beyond it is sent but not cached."),
    "max_event_size": Option(1048576, "int", "master",
                             "Largest event a minion may fire on the master's bus, bytes (msgpack): larger ones are "
                             "trimmed as Salt does (the largest values become \"VALUE_TRIMMED\"), then dropped "
                             "if still too large."),
    "clear_rate_per_peer": Option(200.0, "num", "master", "Clear requests (auth, publish) a second per peer IP."),
    "clear_rate_global": Option(2000.0, "num", "master",
                                "Clear requests a second for all peers together (hellos and other clear "
                                "requests; local clients' publish/job_returns are not charged to it)."),
    "clear_burst_per_peer": Option(400.0, "num", "master", "Burst allowed above clear_rate_per_peer."),
    "clear_burst_global": Option(4000.0, "num", "master", "Burst allowed above clear_rate_global."),
    "refusal_log_interval": Option(60.0, "num", "both",
                                   "Seconds between two log lines for the same kind of refused request (per "
                                   "process; the next line counts the ones suppressed)."),
    "gather_job_timeout": Option(3.0, "num", "master",
                                 "Seconds `saltpan run` waits for minions to say whether they still run a job once "
                                 "its timeout has passed (Salt's default is 10)."),
    "auth_timeout": Option(5.0, "num", "minion", "Seconds to wait for an auth reply."),
    "request_timeout": Option(10.0, "num", "minion", "Seconds to wait for the reply to a request."),
    "refresh_timeout": Option(60.0, "num", "minion", "Seconds saltutil.refresh_* waits for the refresh."),
    "max_message_size": Option(16 * 1024 * 1024, "int", "both", "Largest accepted message, bytes."),
    "master": Option("127.0.0.1", "str_or_list", "minion", "Master address."),
    "master_port": Option(4506, "int", "minion", "Master request server port."),
    "master_finger": Option(None, "str", "minion", "Pinned SHA-256 fingerprint of the master's key."),
    "acceptance_wait_time": Option(10.0, "num", "minion", "Seconds between auth retries while the key is pending."),
    "acceptance_wait_time_max": Option(0.0, "num", "minion", "Cap for the pending-key wait (0 = no growth)."),
    "recon_default": Option(1.0, "num", "minion", "Initial reconnect backoff, seconds."),
    "recon_max": Option(10.0, "num", "minion", "Largest reconnect backoff, seconds."),
    "recon_randomize": Option(True, "bool", "minion", "Draw each reconnect delay at random below the backoff."),
    "random_reauth_delay": Option(10.0, "num", "minion", "Largest random delay before re-authenticating."),
    "master_alive_interval": Option(0.0, "num", "minion",
                                    "Seconds without a heartbeat reply before the master is declared dead "
                                    "(0 = 3 heartbeat periods)."),
    "multiprocessing": Option(False, "bool", "minion", "Run each job in a process instead of a thread."),
    "return_retry_timer": Option(5, "int", "minion", "Seconds between retries of a return."),
}

_PATH_KEYS = {k for k, o in OPTIONS.items() if o.kind == "path"}


def defaults(role: str = "minion") -> dict[str, Any]:
    """A fresh copy of the defaults for a role (minion, master, or compile).

    ``__role`` records the role, as in Salt's opts (file_tree applies its
    nodegroups/ subtree only on a master)."""
    out = {k: copy.deepcopy(o.default) for k, o in OPTIONS.items()}
    out["__role"] = role
    if role in ("master", "minion"):
        # a master and a minion on one host keep separate keys, caches and sockets (as Salt does)
        for key in ("pki_dir", "cachedir", "sock_dir"):
            out[key] = f"{out[key]}/{role}"
        # Salt's /var/run/salt-master.pid and /var/log/salt/master, under root_dir
        out["pidfile"] = f"var/run/saltpan-{role}.pid"
        out["log_file"] = f"var/log/saltpan/{role}"
    return out


def _type_ok(kind: str, value: Any) -> bool:
    if value is None:
        return True
    if kind == "str":
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if kind == "path":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "str_or_list":
        return isinstance(value, (str, list))
    if kind == "roots":
        return isinstance(value, dict) and all(
            isinstance(env, str) and isinstance(dirs, list) and all(isinstance(d, str) for d in dirs)
            for env, dirs in value.items())
    return True


_KIND_WORDS = {
    "str": "a string", "path": "a path (string)", "int": "an integer", "num": "a number", "bool": "true or false",
    "list": "a list", "dict": "a mapping", "str_or_list": "a string or a list",
    "roots": "a mapping of environment to a list of directories, e.g. {base: [/srv/pillar]}",
}


def validate(opts: Mapping[str, Any], source: str) -> None:
    for key, value in opts.items():
        opt = OPTIONS.get(key)
        if opt is None:
            continue
        if not _type_ok(opt.kind, value):
            raise ConfigError(f"{source}: option '{key}' must be {_KIND_WORDS.get(opt.kind, opt.kind)}, "
                              f"got {type(value).__name__} {value!r}")


def load_data_file(path: str, what: str, error: type[Exception], formats: str = "YAML/JSON") -> Any:
    """The YAML (or JSON) document in ``path``; ``error`` names the file (and the line of a
    syntax error) as a ``what`` file: 'cannot read <what> file <path>: ...', '<path>:<line>:
    <what> file is not valid <formats>: ...'."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise error(f"cannot read {what} file {path}: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise error(f"{where}: {what} file is not valid {formats}: {getattr(exc, 'problem', exc)}") from None


def read_file(path: str) -> dict[str, Any]:
    """Parse one config file (YAML or JSON) into a dict, with clear errors."""
    data = load_data_file(path, "config", ConfigError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of option: value, "
                          f"got {type(data).__name__}")
    return data


def _resolve_paths(data: dict[str, Any], base_dir: str) -> dict[str, Any]:
    out = dict(data)
    for key in ("pillar_roots", "file_roots"):
        roots = out.get(key)
        if isinstance(roots, dict):
            out[key] = {env: [_abs(d, base_dir) if isinstance(d, str) else d for d in (dirs or [])]
                        if isinstance(dirs, list) else dirs for env, dirs in roots.items()}
    for key in _PATH_KEYS:
        if isinstance(out.get(key), str):
            out[key] = _abs(out[key], base_dir)
    schema = out.get("pillar_schema")
    if isinstance(schema, str) and schema:
        out["pillar_schema"] = _abs(schema, base_dir)
    elif isinstance(schema, dict):
        out["pillar_schema"] = {k: _abs(v, base_dir) if isinstance(v, str) else v for k, v in schema.items()}
    return out


def _abs(path: str, base_dir: str) -> str:
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(path)))


def _merge_file(opts: dict[str, Any], path: str, seen: set[str], default_include: str | None = None) -> None:
    real = os.path.realpath(path)
    if real in seen:
        raise ConfigError(f"{path}: config include loop")
    seen.add(real)
    data = read_file(path)
    validate(data, path)
    base_dir = os.path.dirname(os.path.abspath(path))
    data = _resolve_paths(data, base_dir)
    includes = data.pop("include", None)
    default_include = data.get("default_include", default_include)
    opts.update(data)
    for pattern in ([default_include] if default_include else []):
        for extra in sorted(glob.glob(os.path.join(base_dir, pattern))):
            _merge_file(opts, extra, seen)
    for extra in ([includes] if isinstance(includes, str) else includes or []):
        for found in sorted(glob.glob(_abs(extra, base_dir))):
            _merge_file(opts, found, seen)


def load(path: str | None, role: str = "minion", overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Load a config file (with its includes) over the defaults for role."""
    opts = defaults(role)
    opts["default_include"] = f"{role}.d/*.conf" if role in ("master", "minion") else None
    configured: dict[str, Any] = {}
    if path:
        _merge_file(configured, path, set(), opts["default_include"])
        opts["conf_file"] = os.path.abspath(path)
    opts.update(configured)
    if overrides:
        opts.update(overrides)
    finish(opts)
    return opts


def finish(opts: dict[str, Any]) -> None:
    """Resolve root_dir-relative defaults and check values that have a fixed set of choices."""
    root = opts.get("root_dir") or "/"
    for key in ("cachedir", "pki_dir", "sock_dir", "pidfile", "log_file"):
        value = opts.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            opts[key] = os.path.normpath(os.path.join(root, value))
    strategy = opts.get("pillar_source_merging_strategy")
    if strategy not in ("smart", "recurse", "aggregate", "overwrite", "none", "list"):
        raise ConfigError(f"{opts.get('conf_file', 'config')}: pillar_source_merging_strategy must be one of "
                          f"smart, recurse, aggregate, overwrite, none, list (got {strategy!r})")
    top_strategy = opts.get("top_file_merging_strategy")
    if top_strategy not in ("merge", "same", "merge_all"):
        raise ConfigError(f"{opts.get('conf_file', 'config')}: top_file_merging_strategy must be merge, same or "
                          f"merge_all (got {top_strategy!r})")
    for key in ("pillarenv", "saltenv", "state_top_saltenv", "default_top", "id"):
        if opts.get(key) is not None and not isinstance(opts[key], str):
            opts[key] = str(opts[key])


def project_dir() -> str:
    """The source checkout holding the shipped example trees."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shipped(role: str = "minion") -> dict[str, Any]:
    """The config used when none is given: the shipped example trees."""
    base = project_dir()
    opts = defaults(role)
    opts.update(
        pillar_roots={"base": [os.path.join(base, "pillar_roots")]},
        file_roots={"base": [os.path.join(base, "state_roots")]},
        fleet_file=os.path.join(base, "state_roots", "..", "demo", "fleet.yaml"),
        nodegroups={"frontends": "G@role:web or G@role:lb"},
    )
    opts["fleet_file"] = os.path.normpath(opts["fleet_file"])
    finish(opts)
    return opts
