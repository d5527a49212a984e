"""The ``at`` state module: one-time jobs queued with ``at`` (present, absent, watch, mod_watch).

As Salt 3008's (``at`` module): a job's script starts with ``### SALT: <tag>`` when a tag is
given; jobs are listed with ``atq`` and read with ``at -c``. ``present`` queues the job every
time it runs (Salt's: use ``unique_tag`` to queue it once); ``watch`` does nothing and queues it
through ``mod_watch`` when a watched state changed. Without the ``at`` command the module is
unavailable (``at module could not be loaded``).
"""

from __future__ import annotations

import datetime
import re
import shutil
import time
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states._ssh_keys import user_info

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "mod_watch", "present", "watch"]

_TAG = re.compile(r"^### SALT: (\w+)")


def unavailable() -> str | None:
    return None if shutil.which("at") and shutil.which("atq") else "at module could not be loaded"


def _run(args: list[str], stdin: str | None = None, runas: str | None = None) -> cmdrun.CommandResult:
    return cmdrun.run(args, cwd="/", stdin=stdin, runas=runas, env={"LC_ALL": "C"})


def jobs(tag: str | None = None) -> list[dict[str, Any]]:
    """Queued jobs as Salt's at.atq lists them: {job, date, time, queue, user, tag}."""
    out = []
    for line in _run(["atq"]).stdout.splitlines():
        job, _, spec = line.partition("\t")
        parts = spec.split()
        if not job.strip().isdigit() or len(parts) < 7:
            continue
        stamp = datetime.datetime(*time.strptime(" ".join(parts[:5]))[:5]).isoformat().split("T")
        job_tag = ""
        for text in _run(["at", "-c", job.strip()]).stdout.splitlines():
            found = _TAG.match(text)
            if found:
                job_tag = found.group(1)
        entry = {"job": int(job), "date": stamp[0], "time": stamp[1], "queue": parts[5], "user": parts[6],
                 "tag": job_tag}
        if tag is None or tag in (job_tag, str(job).strip()):
            out.append(entry)
    return out


def present(ctx: StateContext, name: str, timespec: str, tag: str | None = None, user: str | None = None,
            job: str | None = None, unique_tag: Any = False, **kwargs: Any) -> dict[str, Any]:
    """Queue ``job`` (default: ``name``) to run at ``timespec``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    job = job or name
    if ctx.test:
        return dict(ret, result=None, comment=f"job {job} added and will run on {timespec}")
    if unique_tag:
        if not tag:
            return dict(ret, result=False, comment="no tag provided and unique_tag is set to True")
        if jobs(tag):
            return dict(ret, comment=f"atleast one job with tag {tag} exists.")
    if user and user_info(user) is None:
        return dict(ret, result=False, comment=f"user {user} does not exists")
    stdin = (f"### SALT: {tag}\n{job}" if tag else job) + "\n"
    try:
        res = _run(["at", str(timespec)], stdin=stdin, runas=user)
    except cmdrun.CommandError as exc:
        return dict(ret, result=False, comment=str(exc))
    output = (res.stderr + "\n" + res.stdout).strip()
    if "Garbled time" in output:
        return dict(ret, result=False, comment="invalid timespec")
    found = re.search(r"^job (\d+) at", output, re.M)
    if res.retcode != 0 or not found:
        return dict(ret, result=False, comment=output or f"at failed (exit {res.retcode})")
    queued = [j for j in jobs() if j["job"] == int(found.group(1))]
    if queued:
        ret["changes"] = queued[0]
    as_user = f" as {user}" if user else ""
    return dict(ret, comment=f"job {job} added and will run{as_user} on {timespec}")


def absent(ctx: StateContext, name: str, jobid: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Remove the job ``jobid``; else the jobs matching ``tag``/``runas``/``hour``/...; else all jobs."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if "limit" in kwargs:
        return dict(ret, result=False, comment=f"limit parameter not supported {name}")
    if ctx.test:
        return dict(ret, result=None, comment="removed ? job(s)")
    queued = jobs()
    if jobid is not None:
        matching = [j for j in queued if str(j["job"]) == str(jobid)]
        if not matching:
            return dict(ret, comment=f"job with id {jobid} not present")
    else:
        matching = [j for j in queued if _matches(j, kwargs)]
    removed = []
    for entry in matching:
        if _run(["atrm", str(entry["job"])]).retcode == 0:
            removed.append(str(entry["job"]))
    if jobid is not None:
        ok = str(jobid) in removed
        return dict(ret, result=ok, changes={"removed": removed},
                    comment=f"job with id {jobid} was removed" if ok else f"failed to remove job with id {jobid}")
    if removed:
        ret["changes"]["removed"] = removed
    return dict(ret, comment=f"removed {len(removed)} job(s)")


def _matches(entry: dict[str, Any], conditions: dict[str, Any]) -> bool:
    checks = {"tag": lambda v: entry["tag"] == v, "runas": lambda v: entry["user"] == v,
              "hour": lambda v: entry["time"].split(":")[0] == f"{int(v):02d}",
              "minute": lambda v: entry["time"].split(":")[1] == f"{int(v):02d}",
              "day": lambda v: entry["date"].split("-")[2] == f"{int(v):02d}",
              "month": lambda v: entry["date"].split("-")[1] == f"{int(v):02d}",
              "year": lambda v: entry["date"].split("-")[0] == (f"20{v}" if len(str(v)) == 2 else str(v))}
    return all(check(conditions[key]) for key, check in checks.items() if conditions.get(key))


def watch(ctx: StateContext, name: str, timespec: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """Do nothing; the job is queued through ``mod_watch`` when a watched state changed."""
    return {"name": name, "changes": {}, "result": True, "comment": ""}


def mod_watch(ctx: StateContext, name: str, sfun: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """A watched state changed: queue the job of an ``at.watch`` state."""
    if sfun != "watch":
        return {"name": name, "changes": {}, "result": False, "comment": ""}
    return present(ctx, name, **kwargs)
