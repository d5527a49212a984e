"""CLI commands of the execution plane: master, minion, swarm, key, event, jobs, minions (run: ``runtime.cli.run``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from runtime.cli.options import (
    OUTPUTS,
    add_config,
    add_log_level,
    add_out,
    add_out_file,
    add_state_output,
    plane_config,
    positive_int,
    positive_number,
)
from runtime.config import ConfigError, option

if TYPE_CHECKING:
    from runtime.master.keys import KeyStore


def _opts(args: argparse.Namespace, role: str) -> dict[str, Any]:
    return plane_config(args, role)


def _fail(command: str, exc: Exception) -> int:
    print(f"saltpan {command}: {exc}", file=sys.stderr)
    return 2


def master(args: argparse.Namespace) -> int:
    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("master", exc)
    if args.init_store:
        return init_store(opts)
    if args.rotate_cluster_key:
        return rotate_cluster_key(opts)
    if args.status:
        return master_status(opts, args.out == "json")
    from runtime.master import daemon

    return daemon.run(opts)


def init_store(opts: dict[str, Any]) -> int:
    """``saltpan master --init-store``: create or migrate the master store, then exit."""
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        for line in factory.init_store(opts):
            print(line)
    except (StoreError, ConfigError, OSError) as exc:
        return _fail("master --init-store", exc)
    return 0


def rotate_cluster_key(opts: dict[str, Any]) -> int:
    """``saltpan master --rotate-cluster-key``: a new signing key for the cluster, then exit."""
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        for line in factory.rotate_cluster_key(opts):
            print(line)
    except (StoreError, ConfigError, OSError) as exc:
        return _fail("master --rotate-cluster-key", exc)
    return 0


def master_status(opts: dict[str, Any], as_json: bool) -> int:
    """``saltpan master --status``: the masters sharing the store and the minions each holds."""
    import json
    import time

    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        masters = factory.cluster_masters(opts)
        sessions = factory.existing_session_store(opts)
        holders = sessions.holders() if sessions is not None else {}
        if sessions is not None:
            sessions.close()
    except (StoreError, ConfigError, OSError) as exc:
        return _fail("master --status", exc)
    me = factory.master_id(opts)
    now = time.time() * 1000
    window = 3 * max(0.2, option(opts, "heartbeat_period", float)) * 1000
    table: dict[str, dict[str, Any]] = {}
    for master_id, started, seen in masters or [(me, 0, int(now))]:
        table[master_id] = {"up": now - seen <= max(window, 30_000), "started": started / 1000 if started else None,
                            "seen": seen / 1000, "minions": []}
    for minion_id, (master_id, _seen) in sorted(holders.items()):
        table.setdefault(master_id, {"up": None, "started": None, "seen": None, "minions": []})["minions"].append(
            minion_id)
    if as_json:
        print(json.dumps({"cluster_id": factory.cluster_id(opts), "master_id": me, "masters": table}, indent=2,
                         sort_keys=True))
        return 0
    name = factory.cluster_id(opts)
    print(f"cluster {name}" if name else f"store: {factory.describe(opts)}")
    for master_id, row in sorted(table.items()):
        state = {True: "up", False: "down", None: "?"}[row["up"]]
        mark = " (this master)" if master_id == me else ""
        print(f"{master_id}{mark}: {state}, {len(row['minions'])} minion(s)")
        for minion_id in row["minions"]:
            print(f"    {minion_id}")
    return 0


def minion(args: argparse.Namespace) -> int:
    from runtime.minion.lean_imports import lean_minion_imports

    lean_minion_imports()
    try:
        opts = _opts(args, "minion")
    except ConfigError as exc:
        return _fail("minion", exc)
    if os.environ.get("SALTPAN_NO_REEXEC") != "1" and hasattr(os, "memfd_create"):
        _reexec_lean_minion(opts)  # does not return
    from runtime.minion import daemon

    return daemon.run(opts)


def _reexec_lean_minion(opts: dict[str, Any]) -> None:
    """Replace this process by `python -m runtime.minion` fed the parsed options (see its module doc)."""
    import json
    import sys

    fd = os.memfd_create("saltpan-minion-opts", 0)
    os.write(fd, json.dumps(opts, default=str).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "runtime.minion", "--opts-fd", str(fd)])


KEY_TITLES = {"local": "Local Keys:", "minions": "Accepted Keys:", "minions_denied": "Denied Keys:", "minions_pre": "Unaccepted Keys:",
              "minions_rejected": "Rejected Keys:"}
# which key states each action looks at, as salt-key: pending, plus what --include-* adds
KEY_ACTION_STATUSES = {
    "accept": (("minions_pre", None), ("minions_rejected", "include_rejected"), ("minions_denied", "include_denied")),
    "reject": (("minions_pre", None), ("minions", "include_accepted"), ("minions_denied", "include_denied")),
}


def key_lines(data: dict[str, Any]) -> list[str]:
    """salt-key's text format: a title per key state (in Salt's order), then one id a line
    (``id:  value`` when the state maps ids to fingerprints or keys)."""
    lines: list[str] = []
    for status in sorted(data):
        lines.append(KEY_TITLES.get(status, f"{status}:"))
        ids = data[status]
        for minion_id in sorted(ids):
            lines.append(f"{minion_id}:  {ids[minion_id]}" if isinstance(ids, dict) else minion_id)
    return lines


def _local_finger(pki_dir: str, match: str) -> dict[str, str]:
    """The master's own public key fingerprint under "Local Keys" (salt-key -F), what minions pin
    with ``master_finger``."""
    import fnmatch
    import os

    from runtime.crypt.errors import KeyFileError
    from runtime.crypt.identity import fingerprint, public_from_pem

    path = os.path.join(pki_dir, "master.pub")
    if not any(fnmatch.fnmatchcase("master.pub", p.strip()) for p in match.split(",")):
        return {}
    try:
        with open(path, "rb") as fh:
            return {"master.pub": fingerprint(public_from_pem(fh.read(), path))}
    except (OSError, KeyFileError):
        return {}


def key(args: argparse.Namespace) -> int:
    from runtime.cli.master_access import require_master
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        opts = _opts(args, "master")
        require_master(opts)
        store = factory.open_key_store(opts)
    except (ConfigError, StoreError) as exc:
        return _fail("key", exc)
    try:
        return _key(args, opts, store)
    except StoreError as exc:
        return _fail("key", exc)
    finally:
        store.close()


def _key(args: argparse.Namespace, opts: dict[str, Any], store: KeyStore) -> int:
    def show(data: dict[str, Any]) -> None:
        if args.out == "json":
            print(json.dumps(data, indent=4))
        else:
            for line in key_lines(data):
                print(line)

    actions = (args.accept, args.accept_all, args.reject, args.reject_all, args.delete, args.delete_all,
               args.finger, args.finger_all, args.print_key, args.print_all)
    if args.list or not any(actions):
        show(store.list_keys())
        return 0
    if args.finger or args.finger_all:
        data: dict[str, Any] = store.finger(args.finger or "*")
        local = _local_finger(opts["pki_dir"], args.finger or "*")
        show({"local": local, **data} if local else data)
        return 0
    if args.print_key or args.print_all:
        show({status: {m: pem.strip() for m, pem in keys.items()}
              for status, keys in store.print_keys(args.print_key or "*").items()})
        return 0
    if args.accept or args.accept_all:
        action, match = "accept", args.accept or "*"
    elif args.reject or args.reject_all:
        action, match = "reject", args.reject or "*"
    else:
        action, match = "delete", args.delete or "*"
    found = {status: sorted(ids) for status, ids in store.finger(match).items()}
    if action != "delete":
        wanted = {status for status, flag in KEY_ACTION_STATUSES[action] if flag is None or getattr(args, flag)}
        found = {status: ids for status, ids in found.items() if status in wanted}
        if not found:
            words = [{"minions_pre": "unaccepted", "minions": "accepted", "minions_rejected": "rejected",
                      "minions_denied": "denied"}[status] for status, flag in KEY_ACTION_STATUSES[action]
                     if flag is None or getattr(args, flag)]
            what = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
            print(f"The key glob '{match}' does not match any {what} keys.")
            return 0
    elif not found:
        print(f"The key glob '{match}' does not match any keys.")
        return 0
    print(f"The following keys are going to be {action.rstrip('e')}ed:")
    show(found)
    if not args.yes:
        default = "n" if action == "delete" else "y"
        try:
            answer = input("Proceed? [N/y] " if action == "delete" else "Proceed? [n/Y] ").strip().lower()
        except EOFError:
            print("\nsaltpan key: no answer on stdin; pass -y to proceed without asking", file=sys.stderr)
            return 2
        if not (answer or default).startswith("y"):
            return 0
    exact = sorted({m for ids in found.values() for m in ids})   # exactly the ids confirmed above
    if action == "accept":
        changed = store.accept(exact, include_rejected=args.include_rejected, include_denied=args.include_denied)
    elif action == "reject":
        changed = store.reject(exact, include_accepted=args.include_accepted, include_denied=args.include_denied)
    else:
        changed = store.delete(exact)
    _after_key_change(opts, action, changed)
    done = {m for ids in changed.values() for m in ids}
    for minion_id in sorted(done):
        print(f"Key for minion {minion_id} {action.rstrip('e')}ed.")
    for minion_id in sorted({m for ids in found.values() for m in ids} - done):
        print(f"Key for minion {minion_id} not {action.rstrip('e')}ed: its key file is unusable "
              f"('saltpan key -f {minion_id}' says why; 'saltpan key -d {minion_id}' removes it).", file=sys.stderr)
    return 0


def _after_key_change(opts: dict[str, Any], action: str, changed: dict[str, list[str]]) -> None:
    """Forget what the master knew under keys that went away (sessions, publish key, data
    cache: runtime.master.revocation) and fire salt/key events."""
    import os

    from runtime.master import revocation

    ids = sorted({m for ids in changed.values() for m in ids})
    if not ids:
        return
    revocation.forget_minions(opts, revocation.loses_identity(action, changed), f"key {action}")
    if not os.path.exists(os.path.join(opts["sock_dir"], "master_event_pull.ipc")):
        return  # the master is not running: nobody to tell
    try:
        import zmq

        from runtime.events import EventPusher

        pusher = EventPusher(zmq.Context.instance(), opts["sock_dir"])
        for minion_id in ids:
            pusher.fire("salt/key", {"id": minion_id, "act": action, "result": True})
        pusher.close(linger_ms=2000)  # deliver them before this process exits
    except Exception:  # noqa: BLE001 - the master may not be running
        pass


def event(args: argparse.Namespace) -> int:
    from runtime.cli.master_access import require_running
    from runtime.events import PROBE_PREFIX, EventListener

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("event", exc)
    require_running(opts)
    listener = EventListener(opts["sock_dir"], args.tag or "")
    seen = 0
    try:
        for tag, data in listener.iter(args.timeout):
            if tag.startswith(PROBE_PREFIX):
                continue
            if args.out == "json":
                print(json.dumps({"tag": tag, "data": data}, default=str), flush=True)
            else:
                print(f"{tag}\t{json.dumps(data, default=str, indent=None)}", flush=True)
            seen += 1
            if args.count and seen >= args.count:
                break
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
    return 0


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def jid_to_time(jid: str) -> str:
    """Salt's StartTime of a job: ``2026, Nov 22 00:59:21.979262`` (the time in the jid)."""
    if len(jid) != 20 or not jid.isdigit() or not 1 <= int(jid[4:6]) <= 12:
        return ""
    return f"{jid[:4]}, {MONTHS[int(jid[4:6]) - 1]} {jid[6:8]} {jid[8:10]}:{jid[10:12]}:{jid[12:14]}.{jid[14:20]}"


def job_instance(jid: str, job: dict[str, Any]) -> dict[str, Any]:
    """A job as ``salt-run jobs.list_jobs`` shows it (keyword arguments as Salt's ``__kwarg__`` dict)."""
    return {"Function": job.get("fun"), "Arguments": list(job.get("arg") or []), "Target": job.get("tgt"),
            "Target-type": job.get("tgt_type"), "User": job.get("user"), "StartTime": jid_to_time(jid)}


def jobs(args: argparse.Namespace) -> int:
    from runtime.master.store.errors import StoreError

    try:
        opts = _opts(args, "master")
        return _jobs(args, opts)
    except (ConfigError, StoreError) as exc:
        return _fail("jobs", exc)


def _jobs(args: argparse.Namespace, opts: dict[str, Any]) -> int:
    from runtime.master.store import factory

    if args.action == "active":
        return _active_jobs(args, opts)
    if args.action == "lookup" and not args.jid:
        return _fail("jobs", ValueError("lookup needs a JID: saltpan jobs lookup JID (saltpan jobs list shows them)"))
    if args.action == "list" and args.jid:
        return _fail("jobs", ValueError(f"list takes no JID (got {args.jid!r}): did you mean 'saltpan jobs lookup "
                                        f"{args.jid}'?"))
    from runtime.cli.master_access import require_master

    require_master(opts)
    cache = factory.open_job_cache(opts)
    try:
        if args.action == "list":
            data = {j["jid"]: job_instance(j["jid"], j) for j in cache.list_jobs(int(args.limit))}
            _print_data(data, args)
            return 0
        job = cache.job(args.jid)
        if job is None:
            return _fail("jobs", ValueError(f"no job {args.jid} in the job cache of {opts['cachedir']} (saltpan jobs "
                                            "list shows the jobs it has)"))
        returns = cache.returns(args.jid)
    finally:
        cache.close()
    return _lookup_output(args, opts, job, returns)


def _print_data(data: Any, args: argparse.Namespace) -> None:
    from runtime.cli import output

    print(output.render(data, args.out or "nested", sys.stdout, color=getattr(args, "color", None)))


def _lookup_output(args: argparse.Namespace, opts: dict[str, Any], job: dict[str, Any],
                   returns: dict[str, dict[str, Any]]) -> int:
    """A job's returns as `saltpan run` printed them: highstate for a state run (salt-run
    jobs.lookup_jid uses the job's outputter), minions that did not return named."""
    from runtime.cli.job_output import NO_RESPONSE, ReturnPrinter, state_overrides

    printer = ReturnPrinter(argparse.Namespace(static=args.out not in (None, "highstate"), out=args.out,
                                               color=getattr(args, "color", False)),
                            state_overrides(opts, args), str(job.get("fun")))
    if printer.static:   # json, yaml, nested, txt: one document, as salt-run prints it
        data = {m: r.get("return") for m, r in sorted(returns.items())}
        for missing in sorted(set(job["minions"]) - set(data)):
            data[missing] = NO_RESPONSE
        _print_data(data, args)
        return 0
    for minion_id, ret in sorted(returns.items()):
        printer.returned(minion_id, ret)
    for minion_id in sorted(set(job["minions"]) - set(returns)):
        printer.missing(minion_id)
    printer.finish(len(set(job["minions"]) - set(returns)))
    return 0


def _active_jobs(args: argparse.Namespace, opts: dict[str, Any]) -> int:
    """The jobs minions run now (salt-run jobs.active), leaving out this query's own job."""
    from runtime.cli.master_access import client_for
    from runtime.master.store import factory

    result = client_for(opts).cmd("*", "saltutil.running", timeout=float(args.timeout))
    active: dict[str, Any] = {}
    for minion_id, ret in sorted(result.returns.items()):
        running = ret.get("return")
        for job in running if isinstance(running, list) else []:
            if isinstance(job, dict) and isinstance(job.get("jid"), str) and job["jid"] != result.jid:
                entry = active.setdefault(job["jid"], {**job_instance(job["jid"], job), "Running": [],
                                                       "Returned": []})
                entry["Running"].append({minion_id: job.get("pid")})
    if active:
        cache = factory.open_job_cache(opts)
        try:
            for jid, entry in active.items():
                entry["Returned"] = sorted(cache.returns(jid))
                cached = cache.job(jid)   # the master's record has the keyword arguments too
                if cached is not None:
                    entry["Arguments"] = list(cached.get("arg") or [])
        finally:
            cache.close()
    _print_data(active, args)
    return 0


def minions(args: argparse.Namespace) -> int:
    from runtime.cli.master_access import require_master
    from runtime.master.maintenance import read_presence
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        opts = _opts(args, "master")
        require_master(opts)
        store = factory.open_key_store(opts)
        try:
            keys = store.list_keys()
        finally:
            store.close()
    except (ConfigError, StoreError) as exc:
        return _fail("minions", exc)
    accepted = keys.get("minions", [])
    if not args.status:
        data: Any = accepted
    else:
        present = read_presence(opts["cachedir"])
        data = {"up": [m for m in accepted if m in present], "down": [m for m in accepted if m not in present],
                "pending": keys.get("minions_pre", [])}
    if args.out == "json":
        print(json.dumps(data, indent=4))
    elif isinstance(data, dict):
        for title, ids in data.items():
            print(f"{title}:")
            for minion_id in ids:
                print(f"    - {minion_id}")
    else:
        for minion_id in data:
            print(minion_id)
    return 0


def swarm(args: argparse.Namespace) -> int:
    try:
        opts = _opts(args, "minion")
    except ConfigError as exc:
        return _fail("swarm", exc)
    from runtime.minion.lean_imports import lean_minion_imports

    lean_minion_imports()
    from runtime.minion import swarm as swarm_mod

    return swarm_mod.run(opts, int(args.count), args.prefix, one_source=args.one_source)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    master_config = ("the master's config file (default /etc/saltpan/master when it exists, else the "
                     "built-in defaults): where its keys, job cache and sockets are")

    def daemon(name: str, help: str, description: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description)
        add_config(p, help=f"the {name}'s config file, or a directory holding one named {name} (default "
                           f"/etc/saltpan/{name} when it exists, else the built-in defaults)")
        add_log_level(p, help="log level on stderr (config log_level, default warning)")
        return p

    p = daemon("master", "run the master daemon (foreground)",
               "Run the master in the foreground: the request server, the publisher and the event bus "
               "(docs/operations.md runs it as a service).  It stops on SIGTERM or Ctrl-C.")
    p.add_argument("--init-store", dest="init_store", action="store_true",
                   help="create or migrate the master store (master_store: sqlite or postgres) and exit")
    p.add_argument("--rotate-cluster-key", dest="rotate_cluster_key", action="store_true",
                   help="give the cluster (cluster_id) a new signing key and exit (docs/operations.md)")
    p.add_argument("--status", action="store_true",
                   help="list the masters sharing the store and the minions each holds, then exit")
    add_out(p, ("json",), help="with --status: json")
    p.set_defaults(func=master)

    p = daemon("minion", "run the minion daemon (foreground)",
               "Run a minion in the foreground: it authenticates with its master, runs the jobs it is sent "
               "and returns their results (docs/operations.md).  It stops on SIGTERM or Ctrl-C.")
    p.set_defaults(func=minion)

    p = daemon("swarm", "N lightweight minions in one process (load tests only)",
               "Run COUNT minions in one process, each with its own key, for load tests of a master "
               "(bench/).  Not for production.")
    p.add_argument("--count", "-n", type=positive_int, required=True, metavar="COUNT",
                   help="number of minions (at least 1)")
    p.add_argument("--prefix", default="swarm-",
                   help="minion id prefix: ids are PREFIX0000, PREFIX0001, ... (default swarm-)")
    p.add_argument("--one-source", dest="one_source", action="store_true",
                   help="connect every minion from the same address, as one host (default, with a master on "
                        "loopback: each minion from its own address, 127.64.0.1, 127.64.0.2, ...)")
    p.set_defaults(func=swarm)

    p = sub.add_parser("key", help="manage minion keys (as salt-key)",
                       description="List, accept, reject, delete and fingerprint minion keys on the master, as "
                                   "salt-key does.  Without an action, lists all keys.  Globs (web*) select "
                                   "several minions; the keys affected are listed and confirmed first (-y: "
                                   "without asking).",
                       epilog="examples:\n  saltpan key -L\n  saltpan key -a 'web*'\n  saltpan key -A -y\n"
                              "  saltpan key -F")
    add_config(p, help=master_config)
    add_log_level(p)
    actions = p.add_argument_group("actions (one at a time)").add_mutually_exclusive_group()
    actions.add_argument("-L", "--list", action="store_true", help="list every key by state (the default)")
    actions.add_argument("-a", "--accept", metavar="GLOB", help="accept the pending keys GLOB matches")
    actions.add_argument("-A", "--accept-all", action="store_true", help="accept every pending key")
    actions.add_argument("-r", "--reject", metavar="GLOB", help="reject the pending keys GLOB matches")
    actions.add_argument("-R", "--reject-all", action="store_true", help="reject every pending key")
    actions.add_argument("-d", "--delete", metavar="GLOB", help="delete the keys GLOB matches, in any state")
    actions.add_argument("-D", "--delete-all", action="store_true", help="delete every key")
    actions.add_argument("-f", "--finger", metavar="GLOB", help="print the fingerprints of the keys GLOB matches")
    actions.add_argument("-F", "--finger-all", action="store_true",
                         help="print every key's fingerprint, the master's own under Local Keys")
    actions.add_argument("-p", "--print", dest="print_key", metavar="GLOB",
                         help="print the public keys GLOB matches")
    actions.add_argument("-P", "--print-all", action="store_true", help="print every public key")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--include-rejected", action="store_true", help="accept: also rejected keys")
    p.add_argument("--include-denied", action="store_true", help="accept, reject: also denied keys")
    p.add_argument("--include-accepted", action="store_true", help="reject: also accepted keys")
    p.add_argument("--out", choices=["json", "key"], metavar="OUTPUTTER",
                   help="output format: json, or key (salt-key's text format, the default)")
    p.set_defaults(func=key)

    p = sub.add_parser("event", help="watch the master's event bus",
                       description="Print the events of the running master's event bus (salt-run "
                                   "state.event): one line per event, its tag then its data as JSON.",
                       epilog="example:\n  saltpan event listen --tag salt/job/ --count 10")
    add_config(p, help=master_config)
    add_log_level(p)
    p.add_argument("action", choices=["listen"], metavar="listen", help="listen: print events as they come")
    p.add_argument("--tag", metavar="PREFIX", help="only events whose tag starts with PREFIX (e.g. salt/job/)")
    p.add_argument("--count", type=positive_int, default=0, metavar="N", help="stop after N events")
    p.add_argument("--timeout", type=positive_number, default=None, metavar="SECONDS",
                   help="stop after SECONDS (default: run until Ctrl-C)")
    p.add_argument("--out", choices=["json", "txt"], metavar="OUTPUTTER",
                   help="json: one JSON object a line; txt: tag, a tab, the data (the default)")
    p.set_defaults(func=event)

    p = sub.add_parser("jobs", help="the job cache: list, lookup JID, active",
                       description="The master's job cache (salt-run jobs.*): 'list' the recent jobs, 'lookup "
                                   "JID' the returns of one (as they were printed by saltpan run), 'active' "
                                   "the jobs minions are running now.",
                       epilog="examples:\n  saltpan jobs list --limit 10\n  saltpan jobs lookup 20260101120000123456")
    add_config(p, help=master_config)
    add_log_level(p)
    p.add_argument("action", choices=["list", "lookup", "active"], metavar="ACTION",
                   help="list, lookup (needs JID) or active")
    p.add_argument("jid", nargs="?", metavar="JID", help="lookup: the job id (saltpan run --async prints it)")
    p.add_argument("--limit", type=positive_int, default=50, metavar="N", help="list: the N latest jobs (default 50)")
    p.add_argument("--timeout", "-t", type=positive_number, default=5.0, metavar="SECONDS",
                   help="active: seconds to wait for the minions' answers (default 5)")
    output = p.add_argument_group("output")
    add_out(output, (*OUTPUTS, "highstate"),
            help="output format (default nested; lookup of a state run: highstate)")
    add_out_file(output)
    add_state_output(output)
    p.set_defaults(func=jobs)

    p = sub.add_parser("minions", help="accepted minions, with --status up/down/pending",
                       description="The minions whose keys the master accepted; with --status, which are up "
                                   "(heartbeating), down, and pending acceptance (salt-run manage.status).")
    add_config(p, help=master_config)
    add_log_level(p)
    p.add_argument("--status", action="store_true", help="group them as up, down and pending")
    p.add_argument("--out", choices=["json", "txt"], metavar="OUTPUTTER",
                   help="json, or txt (one id a line; the default)")
    p.set_defaults(func=minions)
