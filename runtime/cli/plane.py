"""CLI commands of the execution plane: master, minion, run, key, event, jobs, minions."""

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
    add_target_flags,
    parse_fun_args,
    plane_config,
)
from runtime.config import ConfigError, option
from runtime.state_returns import STATE_FUNCTIONS

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


def run(args: argparse.Namespace) -> int:
    from runtime.cli import output
    from runtime.client import ClientError, JobResult, LocalClient

    try:
        opts = _opts(args, "master")
    except ConfigError as exc:
        return _fail("run", exc)
    fun_args, fun_kwargs = parse_fun_args(args.args)
    tgt: Any = args.tgt
    if args.tgt_type == "list" and isinstance(tgt, str):
        tgt = [t.strip() for t in tgt.split(",") if t.strip()]
    try:
        client = LocalClient(opts)
        if args.run_async:
            published = client.publish(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, int(args.timeout))
            print(f"Executed command with job ID: {published.jid}")
            return 0
        color = output.use_color(sys.stdout)
        state_run = args.fun in STATE_FUNCTIONS
        fmt = args.out or ("highstate" if state_run else "nested")
        static: dict[str, Any] = {}
        failed_states = False
        summary: list[tuple[str, bool]] = []
        final: JobResult | None = None
        gather = args.gather_job_timeout if args.gather_job_timeout is not None else \
            option(opts, "gather_job_timeout", float)
        for item in client.cmd_iter(tgt, args.fun, fun_args, fun_kwargs, args.tgt_type, float(args.timeout),
                                    gather_job_timeout=gather):
            if isinstance(item, JobResult):
                final = item
                continue
            minion_id, event = item
            ret = event.get("return")
            if args.static:
                static[minion_id] = ret
                continue
            if fmt == "highstate" and state_run:
                from runtime.cli.highstate_output import format_state_run

                text, ok = format_state_run(minion_id, ret, color=color, opts=opts)
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
        clean = sum(1 for _, good in summary if good)
        print(f"\nFleet summary: {len(summary)} minions returned, {clean} without failures, "
              f"{len(summary) - clean} with failed states, {len(final.missing)} did not return")
    if not final.minions:
        print("No minions matched the target. No command was sent, no jid was assigned.", file=sys.stderr)
        return 2
    # as `salt`: exit 1 when a minion did not return or returned a non-zero retcode
    failed = sorted(m for m, r in final.returns.items() if r.get("retcode") not in (0, None))
    if final.missing:
        shown = ", ".join(final.missing[:20]) + (f" and {len(final.missing) - 20} more" if len(final.missing) > 20 else "")
        print(f"ERROR: Minions did not return: {shown} (they may still be running the job; "
              f"to look up the returns later: saltpan jobs lookup {final.jid})", file=sys.stderr)
    if failed:
        print(f"ERROR: Minions returned with non-zero exit code: {', '.join(failed)}", file=sys.stderr)
    return 1 if final.missing or failed or failed_states else 0


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
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        opts = _opts(args, "master")
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


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def jid_to_time(jid: str) -> str:
    """Salt's StartTime of a job: ``2026, Nov 22 00:59:21.979262`` (the time in the jid)."""
    if len(jid) != 20 or not jid.isdigit() or not 1 <= int(jid[4:6]) <= 12:
        return ""
    return f"{jid[:4]}, {MONTHS[int(jid[4:6]) - 1]} {jid[6:8]} {jid[8:10]}:{jid[10:12]}:{jid[12:14]}.{jid[14:20]}"


def job_instance(jid: str, job: dict[str, Any]) -> dict[str, Any]:
    """A job as ``salt-run jobs.list_jobs`` shows it."""
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
    from runtime.cli import output
    from runtime.master.store import factory

    if args.action == "active":
        from runtime.client import ClientError, LocalClient

        try:
            result = LocalClient(opts).cmd("*", "saltutil.running", timeout=float(args.timeout))
        except ClientError as exc:
            return _fail("jobs", exc)
        active: dict[str, Any] = {}
        for minion_id, ret in sorted(result.returns.items()):
            running = ret.get("return")
            for job in running if isinstance(running, list) else []:
                if isinstance(job, dict) and isinstance(job.get("jid"), str):
                    entry = active.setdefault(job["jid"], {**job_instance(job["jid"], job), "Running": [],
                                                           "Returned": []})
                    entry["Running"].append({minion_id: job.get("pid")})
        if active:
            cache = factory.open_job_cache(opts)
            try:
                for jid, entry in active.items():
                    entry["Returned"] = sorted(cache.returns(jid))
            finally:
                cache.close()
        print(output.render(active, args.out or "nested", sys.stdout))
        return 0
    cache = factory.open_job_cache(opts)
    try:
        data: dict[str, Any]
        if args.action == "list":
            data = {j["jid"]: job_instance(j["jid"], j) for j in cache.list_jobs(int(args.limit))}
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
    from runtime.master.maintenance import read_presence
    from runtime.master.store import factory
    from runtime.master.store.errors import StoreError

    try:
        opts = _opts(args, "master")
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

    return swarm_mod.run(opts, int(args.count), args.prefix)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        add_config(p)
        add_log_level(p)

    p = sub.add_parser("master", help="run the master daemon")
    common(p)
    p.add_argument("--init-store", dest="init_store", action="store_true",
                   help="create or migrate the master store (master_store: sqlite or postgres) and exit")
    p.add_argument("--rotate-cluster-key", dest="rotate_cluster_key", action="store_true",
                   help="give the cluster (cluster_id) a new signing key and exit (docs/operations.md)")
    p.add_argument("--status", action="store_true",
                   help="list the masters sharing the store and the minions each holds, then exit")
    add_out(p, ("json",), help="with --status: json")
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
    add_target_flags(p)
    p.set_defaults(tgt_type="glob")
    p.add_argument("--timeout", "-t", type=float, default=5.0, help="seconds to wait for returns (default 5)")
    p.add_argument("--gather-job-timeout", dest="gather_job_timeout", type=float, default=None,
                   help="seconds to wait for minions to say whether they still run the job, once --timeout "
                        "has passed (config gather_job_timeout, default 3)")
    p.add_argument("--async", dest="run_async", action="store_true", help="print the job id and return")
    p.add_argument("--static", action="store_true", help="print all returns together at the end")
    add_out(p, (*OUTPUTS, "highstate"))
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
    p.add_argument("--out", choices=["json", "key"], help="json, or salt-key's text format (default)")
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
    add_out(p)
    p.set_defaults(func=jobs)

    p = sub.add_parser("minions", help="accepted minions, with --status up/down/pending")
    common(p)
    p.add_argument("--status", action="store_true")
    p.add_argument("--out", choices=["json", "txt"])
    p.set_defaults(func=minions)
