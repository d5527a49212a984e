"""`saltpan fileserver update|envs|file_list` and `saltpan git_pillar update`: Salt's `salt-run
fileserver.*` and `salt-run git_pillar.update`, with Salt's `key=value` arguments.

* ``update [backend=gitfs] [remotes=GLOB,...]`` asks the running master to fetch its gitfs remotes now
  (the ``fileserver_update`` request; the master's user only) and prints what each remote did;
  ``git_pillar update`` is the same for the git ext_pillar remotes.
* ``envs [backend=...]`` and ``file_list [saltenv=base] [backend=...]`` read the master's
  configuration and its cached clones here, as ``salt-run`` does: nothing is fetched.

Exit status: 0; 1 when a remote failed to fetch (it keeps serving its last good revision);
2 for a usage error, a bad configuration or a master that does not answer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from runtime.cli.options import (
    OUTPUTS,
    add_config,
    add_log_level,
    add_out,
    parse_fun_args,
    plane_config,
    positive_number,
)
from runtime.config import ConfigError

ARGUMENTS = {"update": {"backend", "remotes"}, "envs": {"backend"}, "file_list": {"backend", "saltenv"}}
UPDATE_TIMEOUT = 300.0  # seconds: the master fetches every remote before it answers


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fileserver", help="the master's file server: update (fetch gitfs now), envs, file_list "
                                          "(as salt-run fileserver.*)",
                       description="The master's file server, as salt-run fileserver.*: 'update' asks the running "
                                   "master to fetch its gitfs remotes now; 'envs' and 'file_list' read the master's "
                                   "configuration and cached clones here (nothing is fetched).  Options may follow "
                                   "the key=value words.",
                       epilog="examples:\n"
                              "  saltpan fileserver update -c /etc/saltpan/master\n"
                              "  saltpan fileserver update backend=gitfs remotes='*states*'\n"
                              "  saltpan fileserver file_list saltenv=dev --out json\n"
                              "exit status: 0 done, 1 a remote failed to fetch (it keeps serving its last good "
                              "revision), 2 a usage or config error or no master answering.")
    add_config(p)
    add_log_level(p)
    add_out(p, OUTPUTS)
    p.add_argument("--timeout", "-t", type=positive_number, default=UPDATE_TIMEOUT,
                   help=f"update: seconds to wait for the master's fetches (default {UPDATE_TIMEOUT:g})")
    p.add_argument("action", choices=sorted(ARGUMENTS), metavar="ACTION",
                   help=f"what to do: {', '.join(sorted(ARGUMENTS))}")
    p.add_argument("args", nargs="*", help="backend=gitfs,roots (or -roots to leave one out), saltenv=base, "
                                           "remotes=GLOB,...")
    p.set_defaults(func=fileserver)

    p = sub.add_parser("git_pillar", help="fetch the git ext_pillar remotes now (as salt-run git_pillar.update)",
                       description="Ask the running master to fetch its git ext_pillar remotes now, as salt-run "
                                   "git_pillar.update.",
                       epilog="example: saltpan git_pillar update remotes='*pillar*' -c /etc/saltpan/master\n"
                              "exit status: 0 done, 1 a remote failed to fetch, 2 a usage or config error or no "
                              "master answering.")
    add_config(p)
    add_log_level(p)
    add_out(p, OUTPUTS)
    p.add_argument("--timeout", "-t", type=positive_number, default=UPDATE_TIMEOUT,
                   help=f"seconds to wait for the master's fetches (default {UPDATE_TIMEOUT:g})")
    p.add_argument("action", choices=["update"], metavar="ACTION", help="update (the only action)")
    p.add_argument("args", nargs="*", help="remotes=GLOB,...")
    p.set_defaults(func=git_pillar)


def _fail(command: str, message: object) -> int:
    print(f"saltpan {command}: {message}", file=sys.stderr)
    return 2


def _names(value: Any) -> list[str]:
    """``gitfs,roots``, a YAML list ``[roots, git]`` or one name, as Salt's runners read ``backend``."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _arguments(command: str, action: str, words: list[str]) -> dict[str, Any]:
    positional, kwargs = parse_fun_args(words)
    if positional:
        raise ValueError(f"{action} takes key=value arguments ({', '.join(sorted(ARGUMENTS[action]))}), "
                         f"got {positional[0]!r}")
    unknown = sorted(set(kwargs) - ARGUMENTS.get(action, {"remotes"}))
    if unknown:
        raise ValueError(f"{command} {action}: unknown argument {unknown[0]!r} (valid: "
                         f"{', '.join(sorted(ARGUMENTS.get(action, {'remotes'})))})")
    return kwargs


def fileserver(args: argparse.Namespace) -> int:
    try:
        kwargs = _arguments("fileserver", args.action, args.args)
        opts = plane_config(args, "master")
    except (ValueError, ConfigError) as exc:
        return _fail("fileserver", exc)
    if args.action == "update":
        return _update(args, opts, _names(kwargs.get("backend")), _names(kwargs.get("remotes")), "fileserver")
    return _read_locally(args, opts, args.action, _names(kwargs.get("backend")), kwargs.get("saltenv"))


def git_pillar(args: argparse.Namespace) -> int:
    try:
        kwargs = _arguments("git_pillar", args.action, args.args)
        opts = plane_config(args, "master")
    except (ValueError, ConfigError) as exc:
        return _fail("git_pillar", exc)
    return _update(args, opts, ["git_pillar"], _names(kwargs.get("remotes")), "git_pillar")


def _update(args: argparse.Namespace, opts: dict[str, Any], backends: list[str], remotes: list[str],
            command: str) -> int:
    from runtime.client import ClientError, LocalClient

    refused = _not_listening(opts)
    if refused:
        return _fail(command, f"{refused} (to fetch without a master: saltpan compile -c CONFIG --fetch)")
    try:
        reply = LocalClient(opts).fileserver_update(backends, remotes, args.timeout)
    except ClientError as exc:
        hint = " (to fetch without a master: saltpan compile -c CONFIG --fetch)" if "did not answer" in str(exc) else ""
        return _fail(command, f"{exc}{hint}")
    failed = [r for r in reply.remotes if not r.ok]
    if args.out:
        from runtime.cli import output

        print(output.render(reply.to_wire(), args.out, sys.stdout))
    else:
        for remote in reply.remotes:
            label = f"{remote.backend} remote '{remote.remote}'"
            state = "updated" if remote.changed else "up to date"
            print(f"{label}: {state}" if remote.ok else f"{label}: fetch failed: {remote.error}")
            for note in remote.notes:
                print(f"    {note}")
        if not reply.remotes:
            print(f"no git remotes to update (backends: {', '.join(reply.backends) or 'none'})")
    for remote in failed:
        print(f"error: {remote.backend} remote '{remote.remote}': fetch failed; it keeps serving its last good "
              "revision", file=sys.stderr)
    return 1 if failed else 0


def _not_listening(opts: dict[str, Any]) -> str | None:
    """Why the master cannot be asked (nothing listens on its ret_port), at once rather than after the
    long wait an update may take; None when something listens."""
    import socket

    from runtime.config import option

    host = opts.get("interface") or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else str(host)
    port = option(opts, "ret_port", int)
    try:
        with socket.create_connection((host, port), timeout=5):
            return None
    except OSError as exc:
        return f"the master is not running: nothing answers on {host}:{port} ({exc.strerror or exc})"


def _read_locally(args: argparse.Namespace, opts: dict[str, Any], action: str, backends: list[str],
                  saltenv: Any) -> int:
    """envs / file_list as the master's file server answers minions, from its configuration and cached
    clones (nothing fetched)."""
    from runtime import pipeline
    from runtime.cli import output
    from runtime.gitfs.remotes import GitConfigError
    from runtime.gitfs.update import select_backends
    from runtime.master.fileserver import FileServer, FileServerError

    try:
        chosen = [b for b in select_backends(opts, backends) if b != "git_pillar"]
        source = pipeline.file_source({**opts, "fileserver_backend": chosen}) if chosen else None
    except GitConfigError as exc:
        return _fail("fileserver", exc)
    data: list[str] = []
    if source is not None:
        server = FileServer(source)
        if action == "envs":
            data = sorted(server.envs())
        else:
            try:
                data = server.file_list(str(saltenv) if saltenv not in (None, "") else "base")
            except FileServerError:
                data = []  # a saltenv no backend has: nothing to list, as Salt answers
        problems = getattr(source, "problems", None)
        for problem in problems() if callable(problems) else []:
            print(f"warning: {problem}", file=sys.stderr)
    print(output.render(data, args.out or "nested", sys.stdout))
    return 0
