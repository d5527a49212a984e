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
import functools
import glob
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

log = logging.getLogger("saltpan.config")


class ConfigError(Exception):
    """A configuration problem, naming the key and the file."""


@dataclass(frozen=True)
class Option:
    default: Any
    kind: str  # str, int, float, bool, list, dict, roots, path, str_or_list, any, num
    role: str  # "both", "master", "minion"
    doc: str
    unit: str = ""  # of a number: "ms", "s", "hours", "bytes", "per second"
    # how this key relates to Salt 3008: "" = Salt's key with Salt's default (checked against
    # runtime/data/salt_defaults.json by the test suite); else why it differs or is saltpan's own
    salt: str = ""


SALTPAN_ONLY = "saltpan's own key"


# One table of defaults. Paths here are relative to root_dir unless absolute.
OPTIONS: dict[str, Option] = {
    # identity and grains
    "id": Option(None, "str", "both", "Minion id. Defaults to the host name (the FQDN). On a master: its id among "
                 "the masters sharing a master_store (default `<FQDN>_master`, as Salt).",
                 salt="unset is null (Salt's default '' means the same)"),
    "grains": Option({}, "dict", "minion", "Static grains merged over the core grains."),
    "grains_file": Option(None, "path", "minion", "A YAML file of extra grains (default: `grains` beside the config file, as Salt's /etc/salt/grains).",
                          salt="saltpan's key for Salt's fixed <config dir>/grains file"),
    "fleet_file": Option(None, "path", "both",
                         "saltpan: a fleet file or directory of grains per minion, used by `saltpan compile` "
                         "(--minion and --all) when no --fleet is given.", salt=SALTPAN_ONLY),
    # trees
    "pillar_roots": Option({"base": ["/srv/pillar"]}, "roots", "both",
                           "Pillar tree per saltenv: {env: [dir, ...]}.",
                           salt="Salt's default also lists /srv/spm/pillar (SPM packages, not supported)"),
    "file_roots": Option({"base": ["/srv/salt"]}, "roots", "both", "State/file tree per saltenv: {env: [dir, ...]}.",
                         salt="Salt's default also lists /srv/spm/salt (SPM packages, not supported)"),
    "state_top": Option("top.sls", "str", "both", "Name of the top file in each environment."),
    "renderer": Option("jinja|yaml", "str", "both", "Default renderer pipeline for sls and top files."),
    "renderer_blacklist": Option([], "list", "both", "Renderers that may not be used."),
    "renderer_whitelist": Option([], "list", "both", "When non-empty, the only renderers that may be used."),
    "extension_modules": Option(None, "path", "both",
                                "Directory of custom modules; ext_pillar drivers live in its pillar/ subdirectory.",
                                salt="unset: no custom modules (Salt's default: <cachedir>/extmods)"),
    # pillar
    "ext_pillar": Option([], "list", "both", "ext_pillar drivers: [{driver: arguments}, ...]."),
    "ext_pillar_first": Option(False, "bool", "both",
                               "Compile ext_pillar before the sls pillar (sls then win and see it as `pillar`).",
                               salt="Salt reads it with this default (not in its default options)"),
    "ext_pillar_timeout": Option(30.0, "num", "both",
                                 "Seconds an ext_pillar driver may take before its data is dropped with an error.",
                                 unit="s", salt=SALTPAN_ONLY),
    "ext_pillar_fail_hard": Option(False, "bool", "both",
                                   "Fail the whole pillar compile when an ext_pillar driver fails.", salt=SALTPAN_ONLY),
    "exclude_ext_pillar": Option([], "list", "both", "ext_pillar driver names to skip.",
                                 salt="Salt reads it with this default (not in its default options)"),
    "pillar_source_merging_strategy": Option("smart", "str", "both",
                                             "smart, recurse, aggregate, overwrite, none or list."),
    "pillar_merge_lists": Option(False, "bool", "both", "Merge lists (append missing items) instead of replacing."),
    "pillar_opts": Option(False, "bool", "both", "Put the master's opts into pillar under `master`."),
    "pillar_safe_render_error": Option(True, "bool", "both",
                                       "Hide render error details in pillar['_errors'] (details go to the log "
                                       "and to `saltpan compile`'s stderr)."),
    "pillarenv": Option(None, "str", "both", "Compile pillar from this environment only."),
    "pillarenv_from_saltenv": Option(False, "bool", "both", "Use saltenv as pillarenv."),
    "pillar_raise_on_missing": Option(False, "bool", "both",
                                      "pillar.get of a missing key without a default is an error instead of ''.",
                                      salt="Salt reads it with this default (not in its default options)"),
    "pillar_cache": Option(False, "bool", "master", "Serve a minion's compiled pillar again (pillar.items, state "
                           "runs) until pillar_cache_ttl passes; saltutil.refresh_pillar compiles anew "
                           "(clean_cache=True, its default)."),
    "pillar_cache_ttl": Option(3600, "int", "master", "Seconds a cached pillar stays valid.", unit="s"),
    "pillar_schema": Option({}, "any", "both",
                            "JSON Schema files (JSON or YAML) validating compiled pillar: one file for the whole "
                            "pillar, or {top-level key: file}. Checked by `saltpan compile --validate` "
                            "(docs/fleet.md); relative paths resolve against the config file.", salt=SALTPAN_ONLY),
    "pillar_mask_patterns": Option(["*password*", "*passwd*", "*secret*", "*private_key*", "*token*"], "list",
                                   "both", "Key globs (case-insensitive, any depth) whose values `saltpan compile` "
                                   "masks as `**********` in human output (nested/txt, --explain, --diff, "
                                   "--validate reports); `--unmask` shows them. JSON/YAML pillar output is never "
                                   "masked. See docs/fleet.md.", salt=SALTPAN_ONLY),
    "nodegroups": Option({}, "dict", "both", "Named compound targets: {name: expression or list}."),
    # the Salt mine (docs/mine.md)
    "mine_enabled": Option(True, "bool", "minion", "Run mine.update when the minion starts and every mine_interval."),
    "mine_interval": Option(60, "num", "minion", "Minutes between two mine.update runs of the minion (a fraction "
                            "of a minute is allowed; 0 runs it at start only).",
                            unit="minutes"),
    "mine_functions": Option({}, "dict", "both",
                             "Functions whose results the minion sends to the mine: {name: [args...]}, or "
                             "{alias: [{mine_function: fun}, args..., {allow_tgt: ..}, {allow_tgt_type: ..}]}; "
                             "also read from pillar (and the master's config through pillar_opts), merged.",
                             salt="Salt reads it with this default (not in its default options)"),
    "mine_get": Option(None, "dict", "master",
                       "Which minions may read which mine functions: {minion id regex: [function regex, ...]}; "
                       "unset: every minion reads every function.",
                       salt="Salt reads it when set (not in its default options)"),
    # file server backends: gitfs and git_pillar (docs/gitfs.md)
    "fileserver_backend": Option(["roots"], "list", "both",
                                 "File server backends in order: roots (file_roots), gitfs (or git). The first "
                                 "backend that has a file serves it; saltenvs are the union."),
    "fileserver_events": Option(False, "bool", "master",
                                "Fire salt/fileserver/gitfs/update on the master's event bus after each gitfs update "
                                "(periodic or `saltpan fileserver update`).",
                                salt="as Salt reads it (default false), though absent from Salt 3008's defaults table"),
    "gitfs_remotes": Option([], "list", "both",
                            "gitfs remotes: URLs, or {URL: [{root: ..}, {mountpoint: ..}, {base: ..}, {name: ..}, "
                            "{saltenv: [{env: [{ref: ..}]}]}, ...]}. Branches and tags become saltenvs."),
    "gitfs_base": Option("master", "str", "both", "The branch (or tag, or commit) serving the base saltenv."),
    "gitfs_root": Option("", "str", "both", "Directory inside each repository that holds the files served."),
    "gitfs_mountpoint": Option("", "str", "both", "Where each repository's files appear under salt://."),
    "gitfs_ref_types": Option(["branch", "tag", "sha"], "str_or_list", "both",
                              "Which refs become saltenvs, and the order a saltenv's ref is looked up in."),
    "gitfs_saltenv": Option([], "list", "both", "Per-saltenv ref, root and mountpoint for every remote: "
                            "[{dev: [{ref: develop}]}]."),
    "gitfs_saltenv_whitelist": Option([], "str_or_list", "both",
                                      "Only these saltenvs (globs or regexes) are served from gitfs."),
    "gitfs_saltenv_blacklist": Option([], "str_or_list", "both",
                                      "These saltenvs (globs or regexes) are not served from gitfs."),
    "gitfs_disable_saltenv_mapping": Option(False, "bool", "both",
                                            "Branches and tags are no saltenvs by themselves; only base and the "
                                            "saltenv mappings are."),
    "gitfs_fallback": Option("", "str", "both", "Branch or tag serving saltenvs that have no ref of their own."),
    "gitfs_update_interval": Option(60, "int", "both", "Seconds between fetches of a gitfs remote by a master."),
    "gitfs_refspecs": Option(["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"], "list", "both",
                             "Refspecs fetched from each gitfs remote."),
    "gitfs_ssl_verify": Option(True, "bool", "both", "Verify the TLS certificate of https remotes."),
    "gitfs_proxy": Option("", "str", "both", "Proxy URL for https remotes."),
    "gitfs_user": Option("", "str", "both", "User name for https remotes (with gitfs_password) or ssh remotes."),
    "gitfs_password": Option("", "str", "both", "Password for https remotes; never logged or shown."),
    "gitfs_insecure_auth": Option(False, "bool", "both", "Allow a password over plain http."),
    "gitfs_pubkey": Option(None, "path", "both", "Public key file for ssh remotes.",
                           salt="unset is null (Salt\'s default \'\' means the same)"),
    "gitfs_privkey": Option(None, "path", "both", "Private key file for ssh remotes.",
                           salt="unset is null (Salt\'s default \'\' means the same)"),
    "gitfs_passphrase": Option("", "str", "both", "Passphrase of gitfs_privkey; never logged or shown."),
    "gitfs_provider": Option(None, "str", "both", "Accepted for Salt configs: saltpan always uses pygit2.",
                           salt="Salt reads it on the master only; saltpan accepts it in either config"),
    "git_pillar_base": Option("master", "str", "both", "The branch an __env__ git_pillar remote uses for base."),
    "git_pillar_branch": Option("master", "str", "both", "Branch of a git_pillar remote given as a bare URL."),
    "git_pillar_env": Option("", "str", "both", "Pillar environment of every git_pillar remote (default: from "
                             "its branch)."),
    "git_pillar_root": Option("", "str", "both", "Directory inside each git_pillar repository holding top.sls."),
    "git_pillar_fallback": Option("", "str", "both", "Branch used when a git_pillar remote lacks its branch."),
    "git_pillar_includes": Option(True, "bool", "both",
                                  "A git_pillar remote's sls may include files of the other remotes of its "
                                  "environment."),
    "git_pillar_update_interval": Option(60, "int", "both",
                                         "Seconds between fetches of a git_pillar remote by a master."),
    "git_pillar_refspecs": Option(["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"], "list",
                                  "both", "Refspecs fetched from each git_pillar remote."),
    "git_pillar_ssl_verify": Option(True, "bool", "both", "Verify the TLS certificate of https git_pillar remotes."),
    "git_pillar_proxy": Option("", "str", "both", "Proxy URL for https git_pillar remotes."),
    "git_pillar_user": Option("", "str", "both", "User name for https or ssh git_pillar remotes."),
    "git_pillar_password": Option("", "str", "both", "Password for https git_pillar remotes; never logged or shown."),
    "git_pillar_insecure_auth": Option(False, "bool", "both", "Allow a git_pillar password over plain http."),
    "git_pillar_pubkey": Option(None, "path", "both", "Public key file for ssh git_pillar remotes.",
                           salt="unset is null (Salt\'s default \'\' means the same)"),
    "git_pillar_privkey": Option(None, "path", "both", "Private key file for ssh git_pillar remotes.",
                           salt="unset is null (Salt\'s default \'\' means the same)"),
    "git_pillar_passphrase": Option("", "str", "both", "Passphrase of git_pillar_privkey; never logged or shown."),
    "git_pillar_provider": Option(None, "str", "both", "Accepted for Salt configs: saltpan always uses pygit2.",
                           salt="Salt reads it on the master only; saltpan accepts it in either config"),
    # states
    "saltenv": Option(None, "str", "both", "Restrict highstate to this environment."),
    "top_file_merging_strategy": Option("merge", "str", "both", "merge, same or merge_all."),
    "env_order": Option([], "list", "both", "Order in which environments are evaluated."),
    "default_top": Option("base", "str", "both", "Fallback top file environment for `same`."),
    "state_top_saltenv": Option(None, "str", "both", "Read the top file from this environment only."),
    "state_auto_order": Option(True, "bool", "both", "Order states by declaration order."),
    "failhard": Option(False, "bool", "both", "Stop a state run at the first failure."),
    "test": Option(False, "bool", "minion", "Run states in test mode by default."),
    "state_output": Option("full", "str", "both",
                           "Highstate outputter (`saltpan call`, `saltpan run`): full (a block per state), terse (a "
                           "line per state), mixed (a line per state, a block per failure), changes (a line per "
                           "state without changes, a block for the others); full_id, terse_id, mixed_id, "
                           "changes_id show the state ID instead of the name."),
    "state_verbose": Option(True, "bool", "both",
                            "Show states that succeeded without changes in the highstate outputter."),
    "state_output_diff": Option(False, "bool", "both",
                                "Leave states that succeeded without changes out of the highstate outputter."),
    "state_output_profile": Option(True, "bool", "both",
                                   "Show each state's start time and duration, and the total run time."),
    "state_output_pct": Option(False, "bool", "both", "Show the success and failure percentages in the summary.",
                               salt="Salt reads it with this default (not in its default options)"),
    "file_client": Option("remote", "str", "minion", "remote (files and pillar from the master) or local."),
    # paths and logging
    "root_dir": Option("/", "path", "both", "Prefix for the default paths below."),
    "cachedir": Option("var/cache/saltpan", "path", "both", "Cache directory (job cache, minion data cache).", salt="saltpan's directories under root_dir (Salt: /var/cache/salt/<role>, ...)"),
    "pki_dir": Option("etc/saltpan/pki", "path", "both", "Key directory (0700).", salt="saltpan's directories under root_dir (Salt: /var/cache/salt/<role>, ...)"),
    "sock_dir": Option("var/run/saltpan", "path", "both", "Directory of the ipc sockets (0700).", salt="saltpan's directories under root_dir (Salt: /var/cache/salt/<role>, ...)"),
    "pidfile": Option(None, "path", "both",
                      "Pid file of the daemon (default `<root_dir>/var/run/saltpan-master.pid` or "
                      "`saltpan-minion.pid`; null for none).", salt="saltpan's file names under root_dir"),
    "log_file": Option(None, "path", "both",
                       "Log file of the daemon (default `<root_dir>/var/log/saltpan/master` or `minion`; null for "
                       "stderr only). Daemons also log to stderr.", salt="saltpan's file names under root_dir"),
    "log_level": Option("warning", "str", "both", "Log level: quiet, critical, error, warning, info, debug."),
    "log_level_logfile": Option(None, "str", "both", "Log level of log_file (default: log_level)."),
    "default_include": Option(None, "str", "both",
                              "Glob of extra config files relative to this file (minion.d/*.conf, master.d/*.conf).",
                              salt="as Salt: minion.d/*.conf or master.d/*.conf by role"),
    "include": Option([], "str_or_list", "both", "Extra config files merged over this one.",
                      salt="Salt reads it with this default (not in its default options)"),
    "user": Option(None, "str", "both", "User the daemon runs as (informational).",
                   salt="informational: saltpan does not switch user (Salt's default: root)"),
    # transport
    "interface": Option("127.0.0.1", "str", "master", "Address the master binds to.",
                        salt="loopback until set (Salt's default 0.0.0.0 listens on every address)"),
    "publish_port": Option(4505, "int", "both", "Publisher port."),
    "ret_port": Option(4506, "int", "master", "Request server port."),
    "worker_threads": Option(5, "int", "master", "Number of MWorker processes."),
    "auto_accept": Option(False, "bool", "master", "Accept every new minion key."),
    "autosign_file": Option(None, "path", "master", "File of minion id globs accepted automatically.",
                            salt="Salt reads it with this default (not in its default options)"),
    "publisher_acl": Option({}, "dict", "master", "Local users allowed to publish: {user: [function globs]}."),
    "keep_jobs": Option(24, "int", "master", "Hours a job stays in the job cache (superseded by keep_jobs_seconds).", unit="hours"),
    "keep_jobs_seconds": Option(86400, "int", "master",
                                "Seconds a job stays in the job cache; 0 keeps jobs forever. When only keep_jobs is "
                                "set, keep_jobs hours (as Salt).", unit="s"),
    "loop_interval": Option(60, "num", "master", "Seconds between the master's maintenance passes (job cache "
                                                 "pruning).", unit="s"),
    "rotate_aes_key": Option(True, "bool", "master", "Rotate the publish key when a key is deleted or rejected."),
    "publish_session": Option(86400, "int", "master", "Seconds between periodic publish key rotations.", unit="s"),
    "reauth_rate": Option(0.0, "num", "master",
                          "Hellos a second this master announces it admits after a restart; minions spread their "
                          "re-authentication over a window of accepted keys / this rate. 0 = 400 per core the "
                          "workers can use (at most worker_threads), at most clear_rate_global.",
                          unit="per second", salt=SALTPAN_ONLY),
    "heartbeat_period": Option(5.0, "num", "master", "Seconds between minion heartbeats (told to minions at auth).",
                               unit="s", salt=SALTPAN_ONLY),
    "heartbeat_max_rate": Option(200.0, "num", "master",
                                 "Heartbeats a second the fleet should send in all: a minion whose session opens "
                                 "is told a heartbeat period of max(heartbeat_period, sessions / this), so "
                                 "10,000 minions beat every 50 s (0 = always heartbeat_period).",
                                 unit="per second", salt=SALTPAN_ONLY),
    "presence_events": Option(True, "bool", "master", "Fire salt/presence events.",
                              salt="on by default (Salt: false); saltpan derives presence from heartbeats"),
    "max_pending_keys": Option(1000, "int", "master", "Largest number of pending keys (key-store flooding).",
                               salt=SALTPAN_ONLY),
    # where the master keeps what outlives it (docs/operations.md "Choosing the master store")
    "master_store": Option("sqlite", "str", "master",
                           "Where the master keeps keys, jobs, minion data and shared session state: sqlite (keys "
                           "as files under pki_dir, the rest in SQLite under cachedir; one master) or postgres "
                           "(one PostgreSQL database that several masters can share; needs master_store_dsn and "
                           "`pip install 'saltpan[postgres]'`). Run `saltpan master --init-store` after changing it.",
                           salt=SALTPAN_ONLY),
    "cluster_id": Option(None, "str", "master",
                         "With master_store: postgres, the name of the cluster the masters sharing the database "
                         "form: they sign with one cluster key kept in the database (minions may move between "
                         "them), and jobs, returns and events published on any of them reach all (docs/operations.md "
                         "\"A cluster of masters\"). Unset: masters sharing the database still share keys, jobs, "
                         "events and revocations, but each signs with its own key.",
                         salt="as Salt 3007's cluster_id, but no cluster_pki_dir or shared filesystem is needed"),
    "master_store_dsn": Option(None, "str", "master",
                               "With master_store: postgres, the database: a libpq connection string or URI "
                               "(`postgresql://saltpan@db.example.com/saltpan`, `host=... dbname=...`); a password "
                               "may come from ~/.pgpass or PGPASSWORD instead.", salt=SALTPAN_ONLY),
    "master_store_pool_size": Option(2, "int", "master",
                                     "With master_store: postgres, connections each master process keeps open at "
                                     "most (a master runs worker_threads + 1 processes that use them).",
                                     salt=SALTPAN_ONLY),
    "master_store_connect_timeout": Option(5.0, "num", "master",
                                           "With master_store: postgres, seconds to wait for a connection before a "
                                           "request is refused `store_unavailable`.", unit="s", salt=SALTPAN_ONLY),
    "master_store_statement_timeout": Option(10.0, "num", "master",
                                             "With master_store: postgres, seconds one statement may run (or wait "
                                             "for a lock) before it is cancelled and the request refused "
                                             "`store_unavailable`; 0 for no limit.", unit="s", salt=SALTPAN_ONLY),
    "max_minion_data_size": Option(1024 * 1024, "int", "master",
                                   "saltpan: largest entry of the minion data cache, bytes of JSON: grains (and "
                                   "other data) a minion uploads beyond it are refused `too_large`, the previous "
                                   "copy kept; a compiled pillar beyond it is sent but not cached.",
                                   unit="bytes", salt=SALTPAN_ONLY),
    "max_event_size": Option(1048576, "int", "master",
                             "Largest event a minion may fire on the master's bus, bytes (msgpack): larger ones are "
                             "trimmed as Salt does (the largest values become \"VALUE_TRIMMED\"), then dropped "
                             "if still too large.", unit="bytes"),
    "clear_rate_per_peer": Option(200.0, "num", "master", "Clear requests (auth, publish) a second per peer IP.", unit="per second", salt=SALTPAN_ONLY),
    "clear_rate_global": Option(2000.0, "num", "master",
                                "Clear requests a second for all peers together (hellos and other clear "
                                "requests; local clients' publish/job_returns are not charged to it).", unit="per second", salt=SALTPAN_ONLY),
    "clear_burst_per_peer": Option(400.0, "num", "master", "Burst allowed above clear_rate_per_peer.", salt=SALTPAN_ONLY),
    "clear_burst_global": Option(4000.0, "num", "master", "Burst allowed above clear_rate_global.", salt=SALTPAN_ONLY),
    "zmq_backlog": Option(1000, "int", "master",
                          "Connections the kernel queues on publish_port and ret_port until the master accepts them "
                          "(listen backlog; at most net.core.somaxconn). A fleet connecting at once beyond it waits "
                          "for its connection attempts to be retried, 1, 3, 7, 15 s later."),
    "max_open_files": Option(100000, "int", "master",
                             "The master raises its open-files limit (soft) to this at start, at most to the hard "
                             "limit (logged when the hard limit is lower): each minion holds a connection to ret_port."),
    "max_connections": Option(100000, "int", "master",
                              "Connections the request port (ret_port) holds at once; beyond it the least recently "
                              "active connection of the address holding the most is closed (its client reconnects). "
                              "Lowered to what the open-files limit leaves.", salt=SALTPAN_ONLY),
    "max_unread_reply_bytes": Option(8 * 1024 * 1024, "int", "master",
                                     "Bytes of replies the connections of one minion, local user or address may "
                                     "leave unread (sent, not yet acknowledged by the peer); beyond it its next "
                                     "requests wait until it reads them.", unit="bytes", salt=SALTPAN_ONLY),
    "max_unfinished_bytes": Option(64 * 1024 * 1024, "int", "master",
                                   "Bytes of requests not yet whole (frames of a multipart message, which libzmq "
                                   "buffers until the last one) the request port holds for all connections "
                                   "together; beyond it the connections holding the most are closed (one holding "
                                   "more than max_message_size at once).", unit="bytes", salt=SALTPAN_ONLY),
    "refusal_log_interval": Option(60.0, "num", "both",
                                   "Seconds between two log lines for the same kind of refused request (per "
                                   "process; the next line counts the ones suppressed).", unit="s", salt=SALTPAN_ONLY),
    "gather_job_timeout": Option(3.0, "num", "master",
                                 "Seconds `saltpan run` waits for minions to say whether they still run a job once "
                                 "its timeout has passed.", unit="s",
                                 salt="3 s (Salt: 10): a minion that is up answers find_job within milliseconds"),
    "auth_timeout": Option(5.0, "num", "minion", "Seconds to wait for an auth reply.", unit="s"),
    "auth_tries": Option(1, "int", "minion", "Auth requests sent (each waiting auth_timeout) before the session "
                         "fails and the reconnect backoff (recon_*) paces the next try.",
                         salt="1 (Salt: 7): the reconnect backoff, not request retries, paces re-authentication"),
    "request_timeout": Option(10.0, "num", "minion", "Seconds to wait for the reply to a request.", unit="s",
                              salt=SALTPAN_ONLY),
    "request_tries": Option(2, "int", "minion", "Times a request is sent before the session fails.",
                            salt=SALTPAN_ONLY),
    "refresh_timeout": Option(60.0, "num", "minion", "Seconds saltutil.refresh_* waits for the refresh.", unit="s",
                              salt=SALTPAN_ONLY),
    "max_message_size": Option(16 * 1024 * 1024, "int", "both", "Largest accepted message.", unit="bytes",
                               salt=SALTPAN_ONLY),
    "master": Option("127.0.0.1", "str_or_list", "minion", "Master address.",
                     salt="loopback until set (Salt's default: the host named salt)"),
    "master_port": Option(4506, "int", "minion", "Master request server port."),
    "source_address": Option("", "str", "minion",
                             "The local IPv4 address the minion's connections to its master leave from "
                             "(empty: the one the routing table picks). The master sees it as the minion's peer "
                             "address, which its per-peer limits count by (docs/protocol.md)."),
    "source_ret_port": Option(0, "int", "minion", "Local port of the connection to the master's request server "
                              "(0: any free port)."),
    "source_publish_port": Option(0, "int", "minion", "Local port of the connection to the master's publisher "
                                  "(0: any free port)."),
    "master_type": Option("str", "str", "minion",
                          "`str`: one master (with a list in `master`, the first address only: saltpan has no hot "
                          "multi-master). `failover`: `master` is a list tried in order; the minion holds one "
                          "session at a time and moves to the next master when its master stops answering "
                          "(docs/failover.md)."),
    "random_master": Option(False, "bool", "minion",
                            "With `master_type: failover`, shuffle the master list at start (with "
                            "`master_failback`, the first master stays first)."),
    "master_failback": Option(False, "bool", "minion",
                              "With `master_type: failover`, return to the first master of the list once it "
                              "answers again."),
    "master_failback_interval": Option(0, "num", "minion",
                                       "Seconds between attempts to return to the first master "
                                       "(0 = master_alive_interval, or 3 heartbeat periods when that is 0 too).",
                                       unit="s"),
    "master_finger": Option(None, "str", "minion", "Pinned SHA-256 fingerprint of the master's key.",
                            salt="unset is null (Salt's default '' means the same)"),
    "acceptance_wait_time": Option(10.0, "num", "minion", "Seconds between auth retries while the key is pending; the least wait after a rejected or denied key.",
                                   unit="s"),
    "acceptance_wait_time_max": Option(0.0, "num", "minion", "Cap for the pending-key wait (0 = no growth).",
                                       unit="s"),
    "recon_default": Option(1000, "num", "minion",
                            "Reconnect backoff after the first failure of a session, in milliseconds as in Salt; "
                            "each failure adds twice the previous backoff, up to recon_max.", unit="ms"),
    "recon_max": Option(10000, "num", "minion", "Largest reconnect backoff, in milliseconds as in Salt.", unit="ms"),
    "recon_randomize": Option(True, "bool", "minion",
                              "Wait a random time below the backoff before reconnecting (spreads the reconnects "
                              "of a fleet after a master restart)."),
    "random_reauth_delay": Option(10.0, "num", "minion", "Largest random delay before re-authenticating.", unit="s"),
    "master_alive_interval": Option(0, "num", "minion",
                                    "Seconds without a heartbeat reply before the master is declared dead "
                                    "(0 = 3 heartbeat periods); with `master_type: failover` the minion then "
                                    "moves to the next master.", unit="s"),
    "multiprocessing": Option(False, "bool", "minion", "Run each job in a process instead of a thread.",
                              salt="false (Salt: true): jobs run in threads unless asked"),
    "return_retry_timer": Option(5, "num", "minion",
                                 "Shortest wait before a return the master refused as busy is sent again.", unit="s"),
    "return_retry_timer_max": Option(10, "num", "minion",
                                     "Longest wait before a return the master refused as busy is sent again "
                                     "(each wait is random between the two).", unit="s"),
    "swarm_start_spread": Option(0.0, "num", "minion",
                                 "`saltpan minion --swarm`: pause after each 50 simulated minions started (0: "
                                 "all start at once, the loop reading replies between each 50).",
                                 unit="s", salt=SALTPAN_ONLY),
    # ext_pillar drivers' connection settings, read from the master config as in Salt
    "postgres": Option({}, "any", "master", "Connection settings of the postgres ext_pillar (docs/ext_pillar.md).",
                       salt="Salt reads it with this default (not in its default options)"),
    "sqlite3": Option({}, "any", "master", "Connection settings of the sqlite3 ext_pillar (docs/ext_pillar.md).",
                      salt="Salt reads it with this default (not in its default options)"),
}

_PATH_KEYS = {k for k, o in OPTIONS.items() if o.kind == "path"}

OptionType = TypeVar("OptionType")


def option(opts: Mapping[str, Any], key: str, kind: type[OptionType]) -> OptionType:
    """Read option ``key`` as ``kind``: ``opts[key]``, or its default in ``OPTIONS`` when ``opts``
    lacks it or holds None.  The one way code reads an option, so a default is written once.

    ``kind`` is what the caller works with: ``float`` also takes an integer, ``str`` a number (as
    the config loader does), ``object`` anything.  A value of another type raises ConfigError
    naming the key; a key that is not in ``OPTIONS`` is a KeyError (add it there, with its default,
    kind and meaning: docs/config.md is generated from the table).  An option whose default is None
    reads as None until set: use :func:`optional_option`."""
    value = optional_option(opts, key, kind)
    if value is None:
        raise ConfigError(f"option {key!r} is not set and has no default")
    return value


def optional_option(opts: Mapping[str, Any], key: str, kind: type[OptionType]) -> OptionType | None:
    """:func:`option` for options that may be unset (default None): None when they are."""
    try:
        declared = OPTIONS[key]
    except KeyError:
        raise KeyError(f"option {key!r} is not in runtime.config.OPTIONS: add it there") from None
    value = opts.get(key)
    if value is None:
        value = declared.default
        if isinstance(value, (dict, list)):
            value = copy.deepcopy(value)   # the table's own objects are never handed out
    if value is None or kind is object:
        return cast(OptionType | None, value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return cast(OptionType, float(value))
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return cast(OptionType, str(value))
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{opts.get('conf_file', 'config')}: option {key!r} must be "
                          f"{_KIND_WORDS.get(declared.kind, declared.kind)}, got {type(value).__name__} {value!r}")
    return value

# Salt keys saltpan does not implement, and what it does instead.  Any other Salt 3008 key (the names
# of runtime/data/salt_defaults.json) gets the general warning; a key neither Salt nor saltpan has is
# reported as such.  Never silently ignored.
INSTEAD: dict[str, str] = {
    "transport": "saltpan always talks ZeroMQ with its own authenticated framing (docs/protocol.md)",
    "hash_type": "saltpan's file server always hashes with sha256",
    "master_job_cache": "jobs are kept in saltpan's job cache (master_store: SQLite or PostgreSQL; keep_jobs_seconds)",
    "job_cache": "jobs are kept in saltpan's job cache (master_store: SQLite or PostgreSQL; keep_jobs_seconds)",
    "ext_job_cache": "jobs are kept in saltpan's job cache (master_store); there are no returners",
    "event_return": "events stay on saltpan's event bus; there are no returners",
    "return": "returns go to the master only; there are no returners",
    "cache": "the minion data cache is in saltpan's master_store (SQLite under cachedir, or PostgreSQL)",
    "minion_data_cache": "saltpan always keeps the minion data cache (grains, last pillar) for targeting",
    "schedule": "saltpan has no scheduler: run `saltpan run` from cron or a systemd timer",
    "beacons": "saltpan runs no beacons",
    "engines": "saltpan runs no engines",
    "reactor": "saltpan has no reactor: subscribe to the event bus (`saltpan event`) instead",
    "startup_states": "saltpan applies no states at minion start",
    "jinja_env": "templates render with Salt's default Jinja settings (StrictUndefined, no trim or lstrip)",
    "jinja_sls_env": "templates render with Salt's default Jinja settings (StrictUndefined, no trim or lstrip)",
    "jinja_trim_blocks": "templates render with Salt's default Jinja settings (no trim_blocks)",
    "jinja_lstrip_blocks": "templates render with Salt's default Jinja settings (no lstrip_blocks)",
    "allow_undefined": "templates always render with StrictUndefined, Salt's default",
    "ipv6": "saltpan binds and connects to the addresses given by interface and master",
    "open_mode": "a key is accepted by `saltpan key`, auto_accept or autosign_file only",
    "external_auth": "local users publish through publisher_acl only",
    "peer": "minions cannot publish jobs to other minions",
    "grains_refresh_every": "grains are read at minion start and on saltutil.refresh_grains",
    "grains_cache": "grains are read at minion start and on saltutil.refresh_grains",
    "log_fmt_console": "saltpan writes its own log line format",
    "log_fmt_logfile": "saltpan writes its own log line format",
    "log_datefmt": "saltpan writes its own log line format",
    "log_granular_levels": "log_level and log_level_logfile set one level for everything",
    "state_aggregate": "states are not aggregated",
    "state_events": "saltpan fires no per-state progress events",
}


@functools.cache
def salt_option_names() -> frozenset[str]:
    """Every option name of Salt 3008's default minion and master options (runtime/data)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "salt_defaults.json")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return frozenset(data["minion"]) | frozenset(data["master"])


def unimplemented(key: str) -> str | None:
    """What saltpan does about a configured key it does not implement (None: it implements the key)."""
    if key in OPTIONS or key.startswith("__"):
        return None
    if key in INSTEAD:
        return f"Salt option '{key}' is not implemented by saltpan: {INSTEAD[key]}"
    if key in salt_option_names():
        return f"Salt option '{key}' is not implemented by saltpan: it has no effect"
    import difflib

    close = difflib.get_close_matches(key, sorted(OPTIONS), n=1, cutoff=0.8)
    hint = f"did you mean '{close[0]}'?" if close else "a typo?"
    return f"'{key}' is neither a Salt 3008 option nor a saltpan one: ignored ({hint})"


def warn_unimplemented(configured: Mapping[str, Any], origins: Mapping[str, str]) -> list[str]:
    """Log (and return) one warning per configured key saltpan does not implement."""
    out = []
    for key in configured:
        message = unimplemented(str(key))
        if message:
            out.append(f"{origins.get(key, 'config')}: {message}")
    for line in out:
        log.warning("%s", line)
    return out


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
    if path.endswith(".json"):
        # JSON is YAML too, but json reads it without PyYAML's import (a third of a short CLI run);
        # what json refuses (a comment, a BOM, an empty file) PyYAML reads as Salt does, or names
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    import yaml  # here, not at the top: a minion reads its options (``option``) without PyYAML loaded

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


def _merge_file(opts: dict[str, Any], path: str, seen: set[str], default_include: str | None = None,
                origins: dict[str, str] | None = None) -> None:
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
    if origins is not None:
        origins.update({key: path for key in data})
    for pattern in ([default_include] if default_include else []):
        for extra in sorted(glob.glob(os.path.join(base_dir, pattern))):
            _merge_file(opts, extra, seen, origins=origins)
    for extra in ([includes] if isinstance(includes, str) else includes or []):
        for found in sorted(glob.glob(_abs(extra, base_dir))):
            _merge_file(opts, found, seen, origins=origins)


def load(path: str | None, role: str = "minion", overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Load a config file (with its includes) over the defaults for role."""
    opts = defaults(role)
    opts["default_include"] = f"{role}.d/*.conf" if role in ("master", "minion") else None
    configured: dict[str, Any] = {}
    origins: dict[str, str] = {}
    if path:
        _merge_file(configured, path, set(), opts["default_include"], origins)
        opts["conf_file"] = os.path.abspath(path)
        warn_unimplemented(configured, origins)
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
    state_output = str(opts.get("state_output") or "full").lower()
    if state_output not in ("full", "terse", "mixed", "changes", "full_id", "terse_id", "mixed_id", "changes_id"):
        log.warning("%s: state_output %r is not supported by saltpan: the highstate outputter shows it as full",
                    opts.get("conf_file", "config"), opts.get("state_output"))
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
