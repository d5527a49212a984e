"""CLI commands of the execution plane: master, minion, run, key, event, jobs, minions."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from runtime import config as config_mod
from runtime.config import ConfigError

TGT_FLAGS = {"pcre": "-E", "list": "-L", "grain": "-G", "grain_pcre": "-P", "pillar": "-I", "compound": "-C",
             "nodegroup": "-N", "ipcidr": "-S"}
STATE_FUNS = {"state.apply", "state.highstate", "state.sls", "state.single"}


def _opts(args: argparse.Namespace, role: str) -> dict[str, Any]:
    opts = config_mod.load(args.config, role) if args.config else config_mod.load(None, role)
    level = getattr(args, "log_level", None)
    if level:
        opts["log_level"] = level
    return opts


def _fail(command: str, exc: Exception) -> int:
    print(f"saltpan {command}: {exc}", file=sys.stderr)
    return 2


def master(args: argparse.Namespace) -> int:
    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("master", exc)
    from runtime.master import daemon

    return daemon.run(opts)


def minion(args: argparse.Namespace) -> int:
    try:
        opts = _opts(args, "minion")
    except ConfigError as exc:
        return _fail("minion", exc)
    from runtime.minion import daemon

    return daemon.run(opts)


def run(args: argparse.Namespace) -> int:
    from runtime import output
    from runtime.call_cmd import parse_cli_args
    from runtime.client import ClientError, JobResult, LocalClient

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("run", exc)
    fun_args, fun_kwargs = parse_cli_args(args.args)
    tgt: Any = args.tgt
    if args.tgt_type == "list" and isinstance(tgt, str):
        tgt = [t.strip() for t in tgt.split(",") if t.strip()]
    try:
        client = LocalClient(opts)
        if args.run_async:
            published = client.publish(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, int(args.timeout))
            print(f"Executed command with job ID: {published['jid']}")
            return 0
        color = output.use_color(sys.stdout)
        state_run = args.fun in STATE_FUNS
        fmt = args.out or ("highstate" if state_run else "nested")
        static: dict[str, Any] = {}
        failed_states = False
        summary: list[tuple[str, bool]] = []
        final: JobResult | None = None
        for item in client.cmd_iter(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, float(args.timeout)):
            if isinstance(item, JobResult):
                final = item
                continue
            minion_id, event = item
            ret = event.get("return")
            if args.static:
                static[minion_id] = ret
                continue
            if fmt == "highstate" and state_run:
                from runtime.highstate_output import format_state_run

                text, ok = format_state_run(minion_id, ret, color=color)
                print(text, flush=True)
                summary.append((minion_id, ok))
                failed_states = failed_states or not ok
            elif fmt == "json":
                print(json.dumps({minion_id: ret}, indent=4, default=str), flush=True)
            else:
                print(output.render(ret, fmt, sys.stdout, label=minion_id), flush=True)
        assert final is not None
    except ClientError as exc:
        return _fail("run", exc)
    for minion_id in final.missing:
        if args.static:
            static[minion_id] = "Minion did not return. [No response]"
        else:
            print(output.render("Minion did not return. [No response]", fmt if fmt != "highstate" else "nested",
                                sys.stdout, label=minion_id))
    if args.static:
        print(output.render(static, fmt if fmt != "highstate" else "nested", sys.stdout))
    if summary and len(summary) > 1:
        ok = sum(1 for _, good in summary if good)
        print(f"\nFleet summary: {len(summary)} minions returned, {ok} without failures, "
              f"{len(summary) - ok} with failed states, {len(final.missing)} did not return")
    if not final.minions:
        print("No minions matched the target. No command was sent, no jid was assigned.", file=sys.stderr)
        return 2
    if final.missing:
        shown = ", ".join(final.missing[:20]) + (f" and {len(final.missing) - 20} more" if len(final.missing) > 20 else "")
        print(f"ERROR: {len(final.missing)} minion(s) did not return: {shown}", file=sys.stderr)
        return 1
    return 2 if failed_states else 0


def key(args: argparse.Namespace) -> int:
    from runtime.master.keys import FileKeyStore

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("key", exc)
    store = FileKeyStore(opts["pki_dir"], max_pending=int(opts.get("max_pending_keys", 1000)))
    if args.list or not any((args.accept, args.accept_all, args.reject, args.reject_all, args.delete,
                             args.delete_all, args.finger, args.finger_all, args.print_key, args.print_all)):
        keys = store.list_keys()
        if args.out == "json":
            print(json.dumps(keys, indent=4))
        else:
            for title, name in (("Accepted Keys:", "minions"), ("Denied Keys:", "minions_denied"),
                                ("Unaccepted Keys:", "minions_pre"), ("Rejected Keys:", "minions_rejected")):
                print(title)
                for minion_id in keys.get(name, []):
                    print(minion_id)
        return 0
    if args.finger or args.finger_all:
        print(json.dumps(store.finger(args.finger or "*"), indent=4))
        return 0
    if args.print_key or args.print_all:
        print(json.dumps(store.print_keys(args.print_key or "*"), indent=4))
        return 0
    if args.accept or args.accept_all:
        action, match = "accept", args.accept or "*"
    elif args.reject or args.reject_all:
        action, match = "reject", args.reject or "*"
    else:
        action, match = "delete", args.delete or "*"
    if not args.yes:
        preview = store.list_keys()
        print(f"The key glob '{match}' will be {action}ed. Keys now: {json.dumps(preview)}")
        answer = input("Proceed? [n/Y] ").strip().lower()
        if answer not in ("", "y", "yes"):
            return 1
    if action == "accept":
        changed = store.accept(match, include_rejected=args.include_rejected, include_denied=args.include_denied)
    elif action == "reject":
        changed = store.reject(match, include_accepted=args.include_accepted, include_denied=args.include_denied)
    else:
        changed = store.delete(match)
    _after_key_change(opts, action, changed)
    for status, ids in changed.items():
        for minion_id in ids:
            print(f"Key for minion {minion_id} {action}ed" + (f" (was {status})" if status else ""))
    if not any(changed.values()):
        print(f"The key glob '{match}' does not match any key to {action}.")
        return 1
    return 0


def _after_key_change(opts: dict[str, Any], action: str, changed: dict[str, list[str]]) -> None:
    """Revoke sessions (rotating the publish key) and fire salt/key events."""
    import os

    ids = sorted({m for ids in changed.values() for m in ids})
    if not ids:
        return
    revoke = action in ("reject", "delete") or (action == "accept" and changed.get("minions_denied"))
    sessions_db = os.path.join(opts["sock_dir"], "sessions.sqlite")
    if revoke and os.path.exists(sessions_db):
        from runtime.master.sessions import SQLiteSessionStore

        store = SQLiteSessionStore.in_sock_dir(opts["sock_dir"])
        try:
            for minion_id in ids:
                store.revoke(minion_id, f"key {action}")
        finally:
            store.close()
    try:
        import zmq

        from runtime.events import EventPusher

        pusher = EventPusher(zmq.Context.instance(), opts["sock_dir"])
        for minion_id in ids:
            pusher.fire("salt/key", {"id": minion_id, "act": action, "result": True})
        pusher.close()
    except Exception:  # noqa: BLE001 - the master may not be running
        pass


def event(args: argparse.Namespace) -> int:
    from runtime.events import PROBE_PREFIX, EventListener

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("event", exc)
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


def jobs(args: argparse.Namespace) -> int:
    from runtime import output
    from runtime.master.jobcache import SQLiteJobCache

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("jobs", exc)
    if args.action == "active":
        from runtime.client import ClientError, LocalClient

        try:
            result = LocalClient(opts).cmd("*", "saltutil.running", timeout=float(args.timeout))
        except ClientError as exc:
            return _fail("jobs", exc)
        active: dict[str, Any] = {}
        for minion_id, ret in result.returns.items():
            for job in ret.get("return") or []:
                if isinstance(job, dict):
                    entry = active.setdefault(job.get("jid"), {"Function": job.get("fun"), "Running": []})
                    entry["Running"].append({minion_id: job.get("pid")})
        print(output.render(active, args.out or "nested", sys.stdout))
        return 0
    cache = SQLiteJobCache(opts["cachedir"])
    try:
        if args.action == "list":
            data = {j["jid"]: {"Function": j["fun"], "Arguments": j["arg"], "Target": j["tgt"],
                               "Target-type": j["tgt_type"], "User": j["user"], "Minions": j["minions"]}
                    for j in cache.list_jobs(int(args.limit))}
        else:
            if not args.jid:
                return _fail("jobs", ValueError("lookup needs a JID"))
            job = cache.job(args.jid)
            if job is None:
                return _fail("jobs", ValueError(f"no job {args.jid} in the job cache"))
            data = {m: r["return"] for m, r in cache.returns(args.jid).items()}
            for missing in sorted(set(job["minions"]) - set(data)):
                data[missing] = "Minion did not return. [No response]"
        print(output.render(data, args.out or "nested", sys.stdout))
    finally:
        cache.close()
    return 0


def minions(args: argparse.Namespace) -> int:
    from runtime.master.keys import FileKeyStore
    from runtime.master.maintenance import read_presence

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("minions", exc)
    keys = FileKeyStore(opts["pki_dir"]).list_keys()
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
    from runtime.minion import swarm as swarm_mod

    return swarm_mod.run(opts, int(args.count), args.prefix)


def register(sub: argparse._SubParsersAction, outputs: list[str]) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", "-c", help="config file")
        p.add_argument("-l", "--log-level", dest="log_level", help="log level")

    p = sub.add_parser("master", help="run the master daemon")
    common(p)
    p.set_defaults(func=master)

    p = sub.add_parser("minion", help="run the minion daemon")
    common(p)
    p.set_defaults(func=minion)

    p = sub.add_parser("swarm", help="N lightweight minions in one process (load tests only)")
    common(p)
    p.add_argument("--count", "-n", type=int, required=True, help="number of minions")
    p.add_argument("--prefix", default="swarm-", help="minion id prefix (ids are PREFIX0000, PREFIX0001, ...)")
    p.set_defaults(func=swarm)

    p = sub.add_parser("run", help="run a function on targeted minions through the master")
    common(p)
    group = p.add_mutually_exclusive_group()
    for tgt_type, flag in TGT_FLAGS.items():
        group.add_argument(flag, dest="tgt_type", action="store_const", const=tgt_type, help=f"{tgt_type} target")
    p.set_defaults(tgt_type="glob")
    p.add_argument("--timeout", "-t", type=float, default=5.0, help="seconds to wait for returns (default 5)")
    p.add_argument("--async", dest="run_async", action="store_true", help="print the job id and return")
    p.add_argument("--static", action="store_true", help="print all returns together at the end")
    p.add_argument("--out", choices=outputs + ["highstate"], help="outputter")
    p.add_argument("tgt")
    p.add_argument("fun")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=run)

    p = sub.add_parser("key", help="manage minion keys (as salt-key)")
    common(p)
    p.add_argument("-L", "--list", action="store_true")
    p.add_argument("-a", "--accept")
    p.add_argument("-A", "--accept-all", action="store_true")
    p.add_argument("-r", "--reject")
    p.add_argument("-R", "--reject-all", action="store_true")
    p.add_argument("-d", "--delete")
    p.add_argument("-D", "--delete-all", action="store_true")
    p.add_argument("-f", "--finger")
    p.add_argument("-F", "--finger-all", action="store_true")
    p.add_argument("-p", "--print", dest="print_key")
    p.add_argument("-P", "--print-all", action="store_true")
    p.add_argument("-y", "--yes", action="store_true")
    p.add_argument("--include-rejected", action="store_true")
    p.add_argument("--include-denied", action="store_true")
    p.add_argument("--include-accepted", action="store_true")
    p.add_argument("--out", choices=["json", "txt"])
    p.set_defaults(func=key)

    p = sub.add_parser("event", help="watch the master's event bus")
    common(p)
    p.add_argument("action", choices=["listen"])
    p.add_argument("--tag", help="only events whose tag starts with this")
    p.add_argument("--count", type=int, default=0, help="stop after N events")
    p.add_argument("--timeout", type=float, default=None, help="stop after S seconds")
    p.add_argument("--out", choices=["json", "txt"])
    p.set_defaults(func=event)

    p = sub.add_parser("jobs", help="the job cache: list, lookup JID, active")
    common(p)
    p.add_argument("action", choices=["list", "lookup", "active"])
    p.add_argument("jid", nargs="?")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--timeout", type=float, default=5.0)
    p.add_argument("--out", choices=outputs)
    p.set_defaults(func=jobs)

    p = sub.add_parser("minions", help="accepted minions, with --status up/down/pending")
    common(p)
    p.add_argument("--status", action="store_true")
    p.add_argument("--out", choices=["json", "txt"])
    p.set_defaults(func=minions)
